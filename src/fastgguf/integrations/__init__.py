"""Hooks that make other libraries read GGUF files through fastgguf (see :mod:`fastgguf.integrations.transformers`)."""
