"""Small Flux-shaped diffusion transformers (diffusers' ``FluxTransformer2DModel``) written as GGUF by fastgguf.

Tensor names are diffusers' own (``transformer_blocks.0.attn.to_q.weight``, ...): diffusers'
``from_single_file`` loads a checkpoint whose names are its model's as they are. (GGUF files of
the original Flux, such as city96's, use Black Forest Labs' names and go through diffusers'
``convert_flux_transformer_checkpoint_to_diffusers``, which hard-codes Flux's width, 3072: a small
model cannot be written that way.)
"""

from __future__ import annotations

import json
import os

import numpy as np

import fastgguf
from fastgguf import GGMLType

#: A Flux-shaped config: every linear layer's input width a multiple of 256 (the K-quants' and
#: IQ4_XS's block), except the image embedder's 64 channels (that weight is then written in F32).
SMALL = dict(patch_size=1, in_channels=64, num_layers=2, num_single_layers=2, attention_head_dim=64,
             num_attention_heads=4, joint_attention_dim=256, pooled_projection_dim=256, guidance_embeds=False,
             axes_dims_rope=(16, 24, 24))


def build(config: dict | None = None, seed: int = 0):
    """A ``FluxTransformer2DModel`` with random weights (normal, std 0.05; norms near 1)."""
    import torch
    from diffusers import FluxTransformer2DModel

    torch.manual_seed(seed)
    model = FluxTransformer2DModel(**(config or SMALL))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator) * 0.05
            parameter.copy_(noise + 1.0 if "norm" in name and parameter.ndim == 1 else noise)
    return model.eval()


def write(model, directory: str, types, name: str = "model.gguf") -> str:
    """Write ``model`` as ``directory/name`` (and its ``config.json``); returns the GGUF path.

    ``types(name, shape)`` gives the ggml type of each 2-D weight (None: F32); a weight whose rows
    are not whole blocks of that type is written in F32. 1-D tensors (biases, norms) are F32.
    """
    os.makedirs(directory, exist_ok=True)
    model.save_config(directory)
    path = os.path.join(directory, name)
    writer = fastgguf.GGUFWriter(path)
    writer.add("general.architecture", "flux")
    for tensor_name, tensor in model.state_dict().items():
        values = tensor.detach().to("cpu").float().numpy()
        qtype = types(tensor_name, values.shape) if values.ndim == 2 else None
        if qtype is not None and values.shape[-1] % fastgguf.types.TYPE_TRAITS[GGMLType(qtype)].block_size:
            qtype = None
        if qtype is None or qtype == GGMLType.F32:
            writer.add_tensor(tensor_name, np.ascontiguousarray(values, dtype=np.float32))
        else:
            blocks = fastgguf.quantize(np.ascontiguousarray(values), qtype)
            writer.add_tensor(tensor_name, blocks, GGMLType(qtype), shape=values.shape)
    writer.write()
    writer.close()
    return path


def uniform(qtype):
    """``types`` for :func:`write`: every weight in ``qtype``."""
    return lambda name, shape: qtype


def inputs(config: dict | None = None, image_tokens: int = 64, text_tokens: int = 16, seed: int = 1,
           dtype=None) -> dict:
    """Keyword arguments for one forward of the model."""
    import torch

    config = config or SMALL
    dtype = dtype or torch.float32
    generator = torch.Generator().manual_seed(seed)
    side = int(image_tokens ** 0.5)
    img_ids = torch.stack(torch.meshgrid(torch.zeros(1), torch.arange(side).float(), torch.arange(side).float(), indexing="ij"),
                          -1).reshape(-1, 3).float()
    return dict(
        hidden_states=torch.randn(1, side * side, config["in_channels"], generator=generator).to(dtype),
        encoder_hidden_states=torch.randn(1, text_tokens, config["joint_attention_dim"], generator=generator).to(dtype),
        pooled_projections=torch.randn(1, config["pooled_projection_dim"], generator=generator).to(dtype),
        timestep=torch.tensor([0.5]).to(dtype),
        img_ids=img_ids,
        txt_ids=torch.zeros(text_tokens, 3),
        return_dict=False,
    )


def load(path: str, directory: str, compute_dtype):
    """``FluxTransformer2DModel.from_single_file`` of ``path`` with ``GGUFQuantizationConfig(compute_dtype)``."""
    from diffusers import FluxTransformer2DModel, GGUFQuantizationConfig

    return FluxTransformer2DModel.from_single_file(
        path, config=directory, local_files_only=True,
        quantization_config=GGUFQuantizationConfig(compute_dtype=compute_dtype), torch_dtype=compute_dtype)


def config_of(directory: str) -> dict:
    with open(os.path.join(directory, "config.json")) as handle:
        return json.load(handle)
