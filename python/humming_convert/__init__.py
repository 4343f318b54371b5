"""humming_convert: the bridge from humming-convert's tiles output to Python engines.

``load_layer(out_dir, prefix)`` returns a layer that humming-kernels'
``humming_forward`` runs without Humming's transform, after checking the output
against the running humming-kernels, GPU and dtype (docs/output-format.md,
"Loading the tiles"). ``check_layer`` is the same validation in pure Python.
Importing this package imports neither torch nor humming.
"""
from .tiles import TilesLayer, check_layer, expected_tensors, load_layer

__all__ = ["TilesLayer", "check_layer", "expected_tensors", "load_layer"]
