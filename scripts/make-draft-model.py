"""Makes a model folder's draft encoder: onnx/model_quantized.onnx, an int8 copy of onnx/model.onnx.

    python3 -m venv /tmp/q && /tmp/q/bin/pip install onnxruntime==1.23.2 onnx==1.23.2
    /tmp/q/bin/python scripts/make-draft-model.py models/all-MiniLM-L6-v2

onnxruntime's dynamic quantization, as transformers.js's `q8` files are made: weights of MatMul
and Gather to int8 per output channel, activations quantized per call. The result is bit for
bit the same on every run with these versions (checked twice: sha256 62abd279...). Then add its
line to the folder's SHA256SUMS (`sha256sum onnx/model_quantized.onnx >> SHA256SUMS` in the
folder): the service uses a draft only when SHA256SUMS lists it.

Search uses it only to choose candidates while the fp32 model computes the exact query vector
(docs/ARCHITECTURE.md, "Text search"); it never produces a stored or returned vector.
"""
import os
import sys

from onnxruntime.quantization import QuantType, quantize_dynamic

if len(sys.argv) != 2:
    sys.exit('usage: make-draft-model.py MODEL_FOLDER')
folder = sys.argv[1]
quantize_dynamic(
    os.path.join(folder, 'onnx', 'model.onnx'),
    os.path.join(folder, 'onnx', 'model_quantized.onnx'),
    weight_type=QuantType.QInt8,
    per_channel=True,
)
