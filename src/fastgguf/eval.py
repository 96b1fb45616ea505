"""Judge quantization formats by what the model outputs: llama-perplexity's KL-divergence statistics.

:func:`eval` runs a base GGUF model in transformers (on CPU, read through
:mod:`fastgguf.integrations.transformers`) over a text, and for every candidate — a llama.cpp mix or
tensor type quantized in memory, or a quantized GGUF file — compares the candidate's next-token
distributions with the base's on the same tokens, in the same pass:

- an in-memory candidate gets, tensor by tensor, exactly the types :func:`plan_requantize` chooses
  (what ``fastgguf quantize`` would write), quantized from the base's values by
  :func:`fastgguf.quantize` and dequantized back: the weights are bit-identical to those of the file
  ``fastgguf quantize`` writes, so are the logits and the statistics;
- one model is held; between candidates only the tensors that differ are dequantized into its
  parameters (through transformers' own tensor processors, as when the file is loaded). Memory:
  the model in float32, the quantized blocks of the in-memory candidates, and one chunk's logits
  per model;
- the base's logits are computed once per chunk, then each candidate's; no logits file.

Which tokens are scored and every statistic follow llama.cpp's ``tools/perplexity`` (its
``--kl-divergence`` mode): the text is tokenized once (with BOS when the vocabulary adds one), cut into
``chunks`` chunks of ``ctx`` tokens whose first token is replaced by BOS (when added), and the second
half of each chunk is scored (positions ``ctx//2 .. ctx-2`` predicting the next token). The one
difference: the base's log-probabilities are used at full precision, where llama-perplexity stores
them in 16 bits and drops base probabilities below e^-16 from the KL sum.

:func:`collect_imatrix` computes an importance matrix with forward hooks in the same kind of pass
and writes llama-imatrix's GGUF format.
"""

from __future__ import annotations

import importlib
import math
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import dequant, quant
from .reader import GGUFFile, TensorInfo
from .types import TYPE_TRAITS, GGMLType

__all__ = ["DELTA_P_PERCENTILES", "PERCENTILES", "KLDStats", "collect_imatrix", "eval", "file_size"]

#: Percentiles of the per-token KL divergence reported (llama-perplexity's).
PERCENTILES = (0.1, 1.0, 5.0, 10.0, 90.0, 95.0, 99.0, 99.9)
#: Percentiles of Δp reported (llama-perplexity's: the KL ones and the quartiles).
DELTA_P_PERCENTILES = (0.1, 1.0, 5.0, 10.0, 25.0, 75.0, 90.0, 95.0, 99.0, 99.9)


def _pct_key(prefix: str, q: float) -> str:
    return f"{prefix}_p{q:g}"


# ---------------------------------------------------------------------------------------------
# Statistics


def _mean_err(total: float, total2: float, n: int) -> tuple[float, float]:
    """llama-perplexity's mean and its standard error (0 for 10 values or fewer)."""
    if n < 1:
        return 0.0, 0.0
    mean = total / n
    var = total2 / n - mean * mean
    return mean, math.sqrt(var / (n - 1)) if var > 0 and n > 10 else 0.0


def _covariance(a: float, b: float, ab: float, n: int) -> float:
    """llama-perplexity's covariance of two means (0 below 10 values)."""
    if n < 10:
        return 0.0
    return (ab / n - (a / n) * (b / n)) / (n - 1)


@dataclass
class KLDStats:
    """llama-perplexity's KL-divergence sums over scored tokens; :meth:`add` a chunk, :meth:`result` at the end.

    Computed in float64 from full-precision log-softmaxes of both models' logits.
    """

    count: int = 0
    sum_nll: float = 0.0
    sum_nll2: float = 0.0
    sum_nll_base: float = 0.0
    sum_nll_base2: float = 0.0
    sum_nll_nll_base: float = 0.0
    sum_kld: float = 0.0
    sum_kld2: float = 0.0
    sum_p_diff: float = 0.0
    sum_p_diff2: float = 0.0
    sum_p_diff4: float = 0.0
    n_same_top: int = 0
    kld_values: list[np.ndarray] = field(default_factory=list)
    p_diff_values: list[np.ndarray] = field(default_factory=list)

    def add(self, base_logits: np.ndarray, logits: np.ndarray, targets: np.ndarray) -> None:
        """Add tokens: row ``i`` of the logits (``(n, n_vocab)``) predicts token ``targets[i]``."""
        base = np.asarray(base_logits, np.float64)
        quant_ = np.asarray(logits, np.float64)
        targets = np.asarray(targets, np.intp)
        if base.shape != quant_.shape or base.ndim != 2 or targets.shape != base.shape[:1]:
            raise ValueError(f"logits {base.shape} and {quant_.shape}, targets {targets.shape} do not match")
        log_base = _log_softmax(base)
        log_q = _log_softmax(quant_)
        rows = np.arange(base.shape[0])
        nll = -log_q[rows, targets]
        nll_base = -log_base[rows, targets]
        kld = np.einsum("ij,ij->i", np.exp(log_base), log_base - log_q)
        p_diff = np.exp(-nll) - np.exp(-nll_base)
        self.count += base.shape[0]
        self.sum_nll += float(nll.sum())
        self.sum_nll2 += float((nll * nll).sum())
        self.sum_nll_base += float(nll_base.sum())
        self.sum_nll_base2 += float((nll_base * nll_base).sum())
        self.sum_nll_nll_base += float((nll * nll_base).sum())
        self.sum_kld += float(kld.sum())
        self.sum_kld2 += float((kld * kld).sum())
        self.sum_p_diff += float(p_diff.sum())
        self.sum_p_diff2 += float((p_diff**2).sum())
        self.sum_p_diff4 += float((p_diff**4).sum())
        self.n_same_top += int((np.argmax(quant_, axis=1) == np.argmax(base, axis=1)).sum())
        self.kld_values.append(kld)
        self.p_diff_values.append(p_diff)

    def result(self) -> dict[str, float]:
        """The statistics (KLD in nats; Δp and same-top-p in percent), as llama-perplexity computes them.

        ``ppl``/``ppl_base`` ± ``_err``; ``log_ppl_ratio`` = mean ln(PPL(Q)/PPL(base)) ± err (with the
        covariance of the two); ``ppl_ratio`` = its exp ± ratio·err; ``ppl_diff``; ``ppl_cor``;
        ``kld_mean`` ± err, ``kld_median``, ``kld_p<q>``, ``kld_min``/``kld_max``; ``delta_p_mean`` ± err,
        ``delta_p_median``, ``delta_p_p<q>``, ``delta_p_min``/``delta_p_max``, ``delta_p_rms`` ± err;
        ``same_top_p`` ± err; ``n_tokens``.
        """
        n = self.count
        if n == 0:
            raise ValueError("no tokens scored")
        log_ppl, log_ppl_err = _mean_err(self.sum_nll, self.sum_nll2, n)
        log_base, log_base_err = _mean_err(self.sum_nll_base, self.sum_nll_base2, n)
        cov = _covariance(self.sum_nll, self.sum_nll_base, self.sum_nll_nll_base, n)
        ppl, ppl_base = math.exp(log_ppl), math.exp(log_base)
        ratio_err = math.sqrt(max(0.0, log_ppl_err**2 + log_base_err**2 - 2 * cov))
        ppl_err, ppl_base_err = ppl * log_ppl_err, ppl_base * log_base_err
        diff_err = math.sqrt(max(0.0, ppl_err**2 + ppl_base_err**2 - 2 * ppl * ppl_base * cov))
        kld_mean, kld_err = _mean_err(self.sum_kld, self.sum_kld2, n)
        dp_mean, dp_err = _mean_err(self.sum_p_diff, self.sum_p_diff2, n)
        mse, mse_err = _mean_err(self.sum_p_diff2, self.sum_p_diff4, n)
        rms = math.sqrt(mse)
        same = self.n_same_top / n
        kld = np.sort(np.concatenate(self.kld_values))
        dp = np.sort(np.concatenate(self.p_diff_values))
        out: dict[str, float] = {
            "n_tokens": n,
            "ppl": ppl, "ppl_err": ppl_err, "ppl_base": ppl_base, "ppl_base_err": ppl_base_err,
            "ppl_cor": cov / (log_ppl_err * log_base_err) if log_ppl_err and log_base_err else 0.0,
            "log_ppl_ratio": log_ppl - log_base, "log_ppl_ratio_err": ratio_err,
            "ppl_ratio": math.exp(log_ppl - log_base), "ppl_ratio_err": math.exp(log_ppl - log_base) * ratio_err,
            "ppl_diff": ppl - ppl_base, "ppl_diff_err": diff_err,
            "kld_mean": kld_mean, "kld_mean_err": kld_err, "kld_median": float(np.median(kld)),
            "kld_min": float(kld[0]), "kld_max": float(kld[-1]),
        }
        for q in PERCENTILES:
            out[_pct_key("kld", q)] = float(np.quantile(kld, q / 100))
        out.update({"delta_p_mean": 100 * dp_mean, "delta_p_mean_err": 100 * dp_err,
                    "delta_p_median": 100 * float(np.median(dp)), "delta_p_min": 100 * float(dp[0]),
                    "delta_p_max": 100 * float(dp[-1]), "delta_p_rms": 100 * rms,
                    "delta_p_rms_err": 100 * (0.5 / rms * mse_err if rms else 0.0)})
        for q in DELTA_P_PERCENTILES:
            out[_pct_key("delta_p", q)] = 100 * float(np.quantile(dp, q / 100))
        out["same_top_p"] = 100 * same
        out["same_top_p_err"] = 100 * math.sqrt(same * (1 - same) / (n - 1)) if n > 1 else 0.0
        return out


def _log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


# ---------------------------------------------------------------------------------------------
# Sizes


class _Counter:
    def __init__(self) -> None:
        self.size = 0

    def write(self, data: Any) -> int:
        n = memoryview(data).nbytes
        self.size += n
        return n


def file_size(model: GGUFFile, tensor_types: Mapping[str, GGMLType], file_type: int) -> int:
    """The size of the file ``fastgguf quantize`` writes from ``model`` with these tensor types (no writing)."""
    from .requantize import _copy_metadata
    from .writer import GGUFWriter, _pad

    writer = GGUFWriter(byteorder=model.byteorder, alignment=model.alignment, version=3)
    _copy_metadata(model.metadata, writer, file_type)
    data = 0
    for info in model.tensors.values():
        qtype = tensor_types.get(info.name, info.type)
        writer.add_tensor_info(info.name, qtype, tuple(info.shape))
        data += _pad(_nbytes(qtype, info.n_elements), model.alignment)
    counter = _Counter()
    writer.write_header(counter)  # type: ignore[arg-type]
    return counter.size + data


def _nbytes(qtype: GGMLType, n_elements: int) -> int:
    block, size = TYPE_TRAITS[qtype]
    return n_elements // block * size


def _bits_per_weight(nbytes: int, n_elements: int) -> float:
    """llama.cpp's BPW: bytes of all tensors x 8 over their elements."""
    return 8 * nbytes / n_elements if n_elements else 0.0


# ---------------------------------------------------------------------------------------------
# The model in transformers, its weights swapped in place


class _Loaded:
    """A GGUF model loaded in transformers (float32, CPU) with what is needed to replace its weights."""

    def __init__(self, path: str) -> None:
        import torch
        import transformers

        from .integrations import transformers as integration

        reason = integration.unsupported_reason()
        if reason is not None:
            raise NotImplementedError(f"fastgguf eval needs transformers: {reason}")
        folder, name = os.path.split(os.path.abspath(path))
        with integration.enabled():
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
            model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
            legacy = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
            parsed = legacy.load_gguf_checkpoint(os.path.join(folder, name), return_tensors=False)
        model.eval()
        self.model = model
        self.legacy = legacy
        self.config = parsed.get("config", {})
        self.file = GGUFFile(path)
        arch = self.file.metadata.get("general.architecture", "")
        self.processor = legacy.TENSOR_PROCESSORS.get(arch, legacy.TensorProcessor)(config=self.config)
        self.mapping = legacy.get_gguf_hf_weights_map(model, self.processor)
        self.targets = dict(model.state_dict())
        metadata = self.file.metadata
        model_kind = metadata.get("tokenizer.ggml.model", "")
        self.add_bos = bool(metadata.get("tokenizer.ggml.add_bos_token", model_kind == "llama"))
        bos = metadata.get("tokenizer.ggml.bos_token_id")
        self.bos: int | None = None if bos is None else int(bos)
        if self.bos is None:
            self.add_bos = False

    def close(self) -> None:
        self.file.close()

    def tokens(self, text: str | Sequence[int]) -> np.ndarray:
        """Token ids of ``text`` as llama.cpp tokenizes it (BOS first when the vocabulary adds one); ids as they are."""
        if not isinstance(text, str):
            return np.asarray(list(text), np.int64)
        ids = list(self.tokenizer.encode(text, add_special_tokens=False))
        if self.add_bos:
            ids.insert(0, self.bos)
        return np.asarray(ids, np.int64)

    def push(self, name: str, values: np.ndarray) -> None:
        """Put GGUF tensor ``name``'s float32 values into the model's parameters, as transformers' loader does."""
        import torch

        from .integrations.transformers import _moves_values_only

        if _moves_values_only(self.legacy, self.processor, name) and name not in self.mapping:
            raise ValueError(f"tensor {name!r} is no parameter of the transformers model")
        # Processors that store tensors themselves (merged MoE experts) find the live parameters here and
        # write into them; anything they replace is copied in afterwards.
        store = dict(self.targets)
        parsed = {"tensors": store, "config": self.config}
        result = self.processor.process(weights=values, name=name, tensor_key_mapping=self.mapping,
                                        parsed_parameters=parsed)
        for key, tensor in store.items():
            if tensor is not self.targets.get(key):
                self._copy(key, tensor)
        if result.name is None:
            return  # the processor stored it itself (above)
        if result.name not in self.mapping:
            raise ValueError(f"tensor {name!r} is no parameter of the transformers model")
        self._copy(self.mapping[result.name], torch.from_numpy(np.ascontiguousarray(result.weights)))

    def _copy(self, key: str, tensor: Any) -> None:
        target = self.targets.get(key)
        if target is None:
            raise ValueError(f"{key!r} is no parameter of the transformers model")
        if target.numel() != tensor.numel():
            raise ValueError(f"{key!r}: {tuple(tensor.shape)} values for a parameter of shape {tuple(target.shape)}")
        with _no_grad():
            target.copy_(tensor.reshape(target.shape))

    def logits(self, ids: np.ndarray, keep: int) -> np.ndarray:
        """float32 logits of the last ``keep`` positions of one sequence, ``(keep, n_vocab)``."""
        import torch

        with torch.no_grad():
            out = self.model(input_ids=torch.from_numpy(ids).reshape(1, -1), use_cache=False, logits_to_keep=keep)
        return out.logits[0, -keep:].float().numpy()


def _no_grad():
    import torch

    return torch.no_grad()


def _chunks(tokens: np.ndarray, ctx: int, chunks: int | None, add_bos: bool, bos: int | None) -> list[np.ndarray]:
    """llama.cpp's chunks: ``len // ctx`` (at most ``chunks``) runs of ``ctx`` tokens, the first one BOS when added."""
    if ctx < 4:
        raise ValueError(f"ctx must be at least 4, not {ctx}")
    n_chunk = len(tokens) // ctx if chunks is None else min(chunks, len(tokens) // ctx)
    if chunks is not None and chunks < 1:
        raise ValueError(f"chunks must be at least 1, not {chunks}")
    if n_chunk < 1:
        raise ValueError(f"the text is {len(tokens)} tokens; a context of {ctx} needs at least {ctx}")
    out = []
    for i in range(n_chunk):
        chunk = tokens[i * ctx : (i + 1) * ctx].copy()
        if add_bos and bos is not None:
            chunk[0] = bos
        out.append(chunk)
    return out


# ---------------------------------------------------------------------------------------------
# Candidates


@dataclass
class _Candidate:
    name: str
    size_bytes: int
    bits_per_weight: float
    changed: dict[str, Callable[[], np.ndarray]]  # tensor name -> its float32 values (GGUF shape)
    source: str = ""


def _blocks_reader(blocks: np.ndarray, qtype: GGMLType, shape: tuple[int, ...]) -> Callable[[], np.ndarray]:
    return lambda: dequant.dequantize(blocks.reshape(-1), qtype, shape)


def _info_reader(info: TensorInfo) -> Callable[[], np.ndarray]:
    return lambda: info.dequantize()


def _quantized_candidate(base: GGUFFile, mix: str, imatrix: Mapping[str, np.ndarray] | None) -> _Candidate:
    """Quantize ``base`` in memory with ``plan_requantize``'s types for ``mix``, as ``fastgguf quantize`` does."""
    from .requantize import _imatrix_entry, _resolve, plan_requantize

    plans, file_type = plan_requantize(base, mix, imatrix=imatrix)
    mix_name = _resolve(mix, False)[0]
    converted = [p for p in plans if p.converted]
    missing = sorted({p.target_type.name for p in converted if not quant.has_quantize(p.target_type)})
    if missing:
        raise NotImplementedError(f"{mix}: no quantizer for {', '.join(missing)} in this build")
    changed: dict[str, Callable[[], np.ndarray]] = {}
    nbytes = elements = 0
    for plan in plans:
        info = base.tensors[plan.name]
        elements += info.n_elements
        nbytes += _nbytes(plan.target_type, info.n_elements)
        if not plan.converted:
            continue
        n_per_row = info.shape[-1]
        rows = info.dequantize().reshape(-1, n_per_row)
        weights = _imatrix_entry(plan, imatrix, mix_name)
        if weights is None:
            blocks = quant.quantize(rows, plan.target_type)
        else:  # one matrix (expert) at a time, each with its own slice, as requantize does
            per_matrix = info.shape[-2] if len(info.shape) >= 2 else rows.shape[0]
            parts = [quant.quantize(rows[m * per_matrix : (m + 1) * per_matrix], plan.target_type,
                                    imatrix=weights[m * n_per_row : (m + 1) * n_per_row])
                     for m in range(max(1, rows.shape[0] // max(per_matrix, 1)))]
            blocks = np.concatenate(parts)
        changed[plan.name] = _blocks_reader(blocks, plan.target_type, tuple(info.shape))
    size = file_size(base, {p.name: p.target_type for p in plans}, file_type)
    return _Candidate(str(mix).upper(), size, _bits_per_weight(nbytes, elements), changed, source="memory")


def _file_candidate(base: GGUFFile, path: str, opened: list[GGUFFile]) -> _Candidate:
    model = GGUFFile(path)
    opened.append(model)
    if set(model.tensors) != set(base.tensors):
        extra = sorted(set(model.tensors) ^ set(base.tensors))
        raise ValueError(f"{path}: not the base model's tensors (differs in {', '.join(extra[:5])})")
    changed: dict[str, Callable[[], np.ndarray]] = {}
    nbytes = elements = 0
    for info in model.tensors.values():
        own = base.tensors[info.name]
        if tuple(own.shape) != tuple(info.shape):
            raise ValueError(f"{path}: tensor {info.name!r} has shape {info.shape}, the base's {own.shape}")
        elements += info.n_elements
        nbytes += info.nbytes
        if info.type != own.type or info.byteorder != own.byteorder or not np.array_equal(info.raw, own.raw):
            changed[info.name] = _info_reader(info)
    return _Candidate(os.path.basename(path), os.path.getsize(path), _bits_per_weight(nbytes, elements), changed,
                      source=path)


# ---------------------------------------------------------------------------------------------
# The pass


def eval(base: str | os.PathLike, types: Iterable[str] = (), *,  # noqa: A001 - fastgguf.eval, as asked for
         imatrix: str | os.PathLike | Mapping[str, np.ndarray] | None = None,
         quantized: Iterable[str | os.PathLike] = (), text: str | Sequence[int], ctx: int = 512,
         chunks: int | None = None, progress: Callable[[int, int], object] | None = None) -> list[dict[str, Any]]:
    """Compare quantized versions of a model with the model itself by their outputs (llama-perplexity's KLD).

    Parameters
    ----------
    base : str or os.PathLike
        A GGUF model transformers can load (its reference outputs).
    types : iterable of str
        llama.cpp mixes (``"Q4_K_M"``, ``"IQ4_XS"``, ...) or tensor types (``"Q4_K"``): each quantized in
        memory from ``base`` with the per-tensor types ``fastgguf quantize`` would choose.
    imatrix : path or mapping, optional
        Importance matrix for the in-memory candidates (as ``fastgguf quantize --imatrix``).
    quantized : iterable of paths
        Quantized GGUF files of the same model, compared as they are.
    text : str or sequence of int
        The evaluation text, or token ids (used as they are: give BOS first if the model wants it).
    ctx : int
        Tokens per chunk; the second half of each is scored.
    chunks : int, optional
        At most this many chunks (default: as many as the text fills).
    progress : callable, optional
        Called as ``progress(done, total)`` after each forward pass (``chunks * (1 + candidates)`` in all).

    Returns
    -------
    list of dict
        One record per candidate (types first, then files): ``name``, ``source`` (``"memory"`` or the
        path), ``bits_per_weight`` (bytes of all tensors x 8 / elements, as llama.cpp prints it),
        ``size_bytes`` (the file's size; for in-memory candidates that of the file ``fastgguf quantize``
        writes), ``n_chunks``, ``ctx``, and the statistics of :meth:`KLDStats.result`.
    """
    from .imatrix import read_imatrix

    types = [str(t) for t in types]
    paths = [str(os.fspath(p)) for p in quantized]
    if not types and not paths:
        raise ValueError("nothing to compare: give types and/or quantized files")
    if imatrix is not None and not isinstance(imatrix, Mapping):
        imatrix = read_imatrix(imatrix)
    opened: list[GGUFFile] = []
    loaded = _Loaded(os.fspath(base))
    try:
        candidates = [_quantized_candidate(loaded.file, t, imatrix) for t in types]
        candidates += [_file_candidate(loaded.file, p, opened) for p in paths]
        chunk_list = _chunks(loaded.tokens(text), ctx, chunks, loaded.add_bos, loaded.bos)
        stats = [KLDStats() for _ in candidates]
        first = ctx // 2
        keep = ctx - first
        current: dict[str, int] = {}  # tensor -> the candidate whose values it holds (absent: the base's)
        base_values = {info.name: _info_reader(info) for info in loaded.file.tensors.values()}
        order = {name: i for i, name in enumerate(loaded.file.tensors)}

        def switch_to(index: int) -> None:
            wanted = {} if index < 0 else {name: index for name in candidates[index].changed}
            for name in sorted(set(current) | set(wanted), key=order.__getitem__):
                if current.get(name) == wanted.get(name):
                    continue
                reader = base_values[name] if name not in wanted else candidates[index].changed[name]
                loaded.push(name, reader())
                if name in wanted:
                    current[name] = index
                else:
                    del current[name]

        total, done = len(chunk_list) * (1 + len(candidates)), 0
        for chunk in chunk_list:
            switch_to(-1)
            targets = chunk[first + 1 :]
            base_logits = loaded.logits(chunk, keep)[:-1]
            done += 1
            if progress is not None:
                progress(done, total)
            for index in range(len(candidates)):
                switch_to(index)
                stats[index].add(base_logits, loaded.logits(chunk, keep)[:-1], targets)
                done += 1
                if progress is not None:
                    progress(done, total)
        switch_to(-1)
        records = []
        for candidate, stat in zip(candidates, stats):
            record: dict[str, Any] = {"name": candidate.name, "source": candidate.source,
                                      "bits_per_weight": candidate.bits_per_weight,
                                      "size_bytes": candidate.size_bytes, "n_chunks": len(chunk_list), "ctx": ctx}
            record.update(stat.result())
            records.append(record)
        return records
    finally:
        loaded.close()
        for model in opened:
            model.close()


# ---------------------------------------------------------------------------------------------
# Importance matrices


def collect_imatrix(model: str | os.PathLike, text: str | Sequence[int], out: str | os.PathLike, *, ctx: int = 512,
                    chunks: int | None = None, dataset: str | None = None,
                    progress: Callable[[int, int], object] | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Write an importance matrix of ``model`` over ``text`` in llama-imatrix's GGUF format.

    Every ``blk.*`` weight the transformers model multiplies in a linear layer (or in a MoE router,
    ``ffn_gate_inp``) gets the sums of the squares of its inputs, per input column, over all tokens of
    every chunk (``<name>.in_sum2``, ``(1, n_per_row)``), and the number of tokens (``<name>.counts``),
    as llama-imatrix collects them (chunks of ``ctx`` tokens, BOS first when the vocabulary adds one,
    all positions).

    MoE expert tensors (3-D ``ffn_{gate,up,down}_exps``) are collected per expert, as llama-imatrix
    does for ``MUL_MAT_ID``: for every token and every expert the router chose for it, the expert's
    row of ``in_sum2`` (``(n_expert, n_per_row)``) gets the squares of that expert's input, and its
    count (``counts`` ``(n_expert, 1)``) one. Gate and up read the token's hidden state; down reads
    ``act(gate) * up`` recomputed in float32 from that expert's weights. transformers runs the experts
    as one module holding merged parameters (``gate_up_proj`` ``(n_expert, 2 * n_ff, n_embd)``,
    ``down_proj`` ``(n_expert, n_embd, n_ff)``, called with the hidden states, top-k expert ids and
    weights; qwen2moe, qwen3moe, mixtral, ...); a forward pre-hook on it reads the routing. Expert
    tensors of a module laid out otherwise are left out, with a warning naming them.
    ``progress(done, total)`` is called after each chunk.

    Returns
    -------
    dict
        GGUF tensor name -> (in_sum2 float64 ``(n_mat, n_per_row)``, counts ``(n_mat,)``); ``n_mat`` is
        1, or the number of experts for an expert tensor.
    """
    import torch

    from .types import GGUFValueType
    from .writer import GGUFWriter

    loaded = _Loaded(os.fspath(model))
    try:
        chunk_list = _chunks(loaded.tokens(text), ctx, chunks, loaded.add_bos, loaded.bos)
        by_param = {hf: gguf for gguf, hf in loaded.mapping.items()}
        sums: dict[str, np.ndarray] = {}
        counts: dict[str, int] = {}
        expert_sums: dict[str, np.ndarray] = {}
        expert_counts: dict[str, np.ndarray] = {}
        handles = []
        for module_name, module in loaded.model.named_modules():
            weight = getattr(module, "weight", None)
            if not isinstance(weight, torch.Tensor) or weight.ndim != 2:
                continue
            name = by_param.get(f"{module_name}.weight" if module_name else "weight")
            if name is None or not name.startswith("blk.") or name not in loaded.file.tensors:
                continue
            # linear layers, and MoE routers (``ffn_gate_inp``: their own module multiplying its input by ``weight``)
            if not isinstance(module, torch.nn.Linear) and ".ffn_gate_inp." not in name:
                continue
            info = loaded.file.tensors[name]
            # 1-D: a one-row matrix stored as a vector (qwen2moe's ffn_gate_inp_shexp), which llama.cpp multiplies too
            if len(info.shape) not in (1, 2) or info.shape[-1] != weight.shape[1]:
                continue

            def hook(_module, inputs, name=name, n_per_row=info.shape[-1]):
                if not inputs or not isinstance(inputs[0], torch.Tensor) or inputs[0].shape[-1] != n_per_row:
                    return
                x = inputs[0].detach().reshape(-1, inputs[0].shape[-1]).double()
                square = (x * x).sum(dim=0).numpy()
                if name in sums:
                    sums[name] += square
                else:
                    sums[name] = square
                counts[name] = counts.get(name, 0) + x.shape[0]

            handles.append(module.register_forward_pre_hook(hook))
        expert_names = {name for name, info in loaded.file.tensors.items()
                        if name.startswith("blk.") and len(info.shape) == 3 and "_exps" in name}
        for module_name, module in loaded.model.named_modules():
            hooked = _hook_experts(module, module_name, loaded, expert_sums, expert_counts)
            if hooked is not None:
                handles.append(hooked[0])
                expert_names -= hooked[1]
        if expert_names:
            warnings.warn(f"{model}: expert tensors not collected (no transformers experts module of a known "
                          f"layout runs them): {', '.join(sorted(expert_names))}", stacklevel=2)
        if not handles:
            raise ValueError(f"{model}: no linear layer of the transformers model maps to a blk.* GGUF tensor")
        try:
            for done, chunk in enumerate(chunk_list, 1):
                loaded.logits(chunk, 1)
                if progress is not None:
                    progress(done, len(chunk_list))
        finally:
            for handle in handles:
                handle.remove()
    finally:
        loaded.close()
    writer = GGUFWriter(out)
    writer.add("general.type", "imatrix")
    writer.add("imatrix.datasets", [dataset if dataset is not None else "(text)"])
    writer.add("imatrix.chunk_count", len(chunk_list), GGUFValueType.UINT32)
    writer.add("imatrix.chunk_size", ctx, GGUFValueType.UINT32)
    result = {}
    for name in sorted(sums):
        in_sum2 = sums[name].reshape(1, -1)
        count = np.asarray([counts[name]], np.float64)
        writer.add_tensor(f"{name}.in_sum2", in_sum2.astype(np.float32))
        writer.add_tensor(f"{name}.counts", count.astype(np.float32).reshape(1, 1))
        result[name] = (in_sum2, count)
    for name in sorted(expert_sums):
        in_sum2, count = expert_sums[name], expert_counts[name].astype(np.float64)
        writer.add_tensor(f"{name}.in_sum2", in_sum2.astype(np.float32))
        writer.add_tensor(f"{name}.counts", count.astype(np.float32).reshape(-1, 1))
        result[name] = (in_sum2, count)
    writer.write()
    return dict(sorted(result.items()))


def _hook_experts(module: Any, module_name: str, loaded: _Loaded, sums: dict[str, np.ndarray],
                  counts: dict[str, np.ndarray]) -> tuple[Any, set[str]] | None:
    """Hook a transformers experts module (merged ``gate_up_proj`` / ``down_proj``) to collect its expert tensors.

    Returns the hook's handle and the GGUF names it collects, or None when ``module`` is no experts module of
    the layout this knows: ``gate_up_proj`` ``(E, 2 * n_ff, n_embd)`` with gate first, ``down_proj``
    ``(E, n_embd, n_ff)``, ``act_fn``, no biases, not transposed, a forward taking ``hidden_states`` (tokens,
    n_embd) and ``top_k_index`` (tokens, k) and computing ``down(act(gate(x)) * up(x))`` per chosen expert.
    """
    import inspect

    import torch

    gate_up, down, act = (getattr(module, attr, None) for attr in ("gate_up_proj", "down_proj", "act_fn"))
    if not (isinstance(gate_up, torch.Tensor) and isinstance(down, torch.Tensor) and callable(act)):
        return None
    if gate_up.ndim != 3 or down.ndim != 3:
        return None
    n_expert, two_ff, n_embd = gate_up.shape
    n_ff = two_ff // 2
    if two_ff % 2 or tuple(down.shape) != (n_expert, n_embd, n_ff):
        return None
    if getattr(module, "is_transposed", False) or not getattr(module, "is_concatenated", True) \
            or getattr(module, "has_bias", False) or not getattr(module, "has_gate", True) \
            or getattr(module, "has_post_expert_norm", False) \
            or any(getattr(module, attr, None) is not None for attr in ("gate_up_proj_bias", "down_proj_bias")):
        return None
    try:
        signature = inspect.signature(module.forward)
    except (TypeError, ValueError):
        return None
    if "hidden_states" not in signature.parameters or "top_k_index" not in signature.parameters:
        return None
    names: dict[str, str] = {}
    prefix = f"{module_name}." if module_name else ""
    for gguf_name, hf_name in loaded.mapping.items():
        if hf_name not in (f"{prefix}gate_up_proj", f"{prefix}down_proj"):
            continue
        name = gguf_name if gguf_name in loaded.file.tensors else f"{gguf_name}.weight"
        info = loaded.file.tensors.get(name)
        if info is None or not name.startswith("blk.") or len(info.shape) != 3:
            continue
        # (numpy order) gate and up: (E, n_ff, n_embd) from gate_up_proj; down: (E, n_embd, n_ff) from down_proj
        for role, param, shape in (("gate", "gate_up_proj", (n_expert, n_ff, n_embd)),
                                   ("up", "gate_up_proj", (n_expert, n_ff, n_embd)),
                                   ("down", "down_proj", (n_expert, n_embd, n_ff))):
            if f"ffn_{role}_exps" in name and hf_name.endswith(param) and tuple(info.shape) == shape:
                names[role] = name
    if set(names) != {"gate", "up", "down"}:
        return None

    def hook(mod, args, kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return None
        x = bound.arguments["hidden_states"].detach()
        index = bound.arguments["top_k_index"].detach()
        x = x.reshape(-1, x.shape[-1])
        index = index.reshape(x.shape[0], -1)
        with torch.no_grad():
            weights_gu = mod.gate_up_proj
            for e in range(n_expert):
                rows = (index == e).nonzero()[:, 0]  # one row per (token, choice), as llama-imatrix counts
                if rows.numel() == 0:
                    continue
                current = x[rows].float()
                gate, up = torch.nn.functional.linear(current, weights_gu[e].float()).chunk(2, dim=-1)
                hidden = mod.act_fn(gate) * up
                for role, inputs in (("gate", current), ("up", current), ("down", hidden)):
                    name = names[role]
                    if name not in sums:
                        sums[name] = np.zeros((n_expert, inputs.shape[-1]))
                        counts[name] = np.zeros(n_expert, np.int64)
                    sums[name][e] += (inputs.double() ** 2).sum(dim=0).numpy()
                    counts[name][e] += rows.numel()
        return None

    return module.register_forward_pre_hook(hook, with_kwargs=True), set(names.values())
