"""The anchor of bench/text-ingest.bench.ts: onnxruntime in Python embedding the same passages
with the same ONNX file, on every core, as a plain script would: Hugging Face tokenizers
(truncation to the model's max_seq_length, [CLS] and [SEP] kept), batches in the given order,
each padded to its longest text, mean pooling over real tokens, L2 normalisation.

    python bench/ort_embed.py MODEL_DIR PASSAGES.json OUT.json --batch 32 [--threads N]

Writes {"seconds": ..., "texts": ..., "first": [the first 20 vectors]} to OUT.json; the time
covers tokenising, the model and pooling (not loading).
"""
import argparse
import json
import os
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

p = argparse.ArgumentParser()
p.add_argument("model_dir")
p.add_argument("passages")
p.add_argument("out")
p.add_argument("--batch", type=int, default=32)
p.add_argument("--threads", type=int, default=os.cpu_count())
a = p.parse_args()

max_len = json.load(open(os.path.join(a.model_dir, "sentence_bert_config.json")))["max_seq_length"]
tok = Tokenizer.from_file(os.path.join(a.model_dir, "tokenizer.json"))
tok.enable_truncation(max_length=max_len)
tok.no_padding()

so = ort.SessionOptions()
so.intra_op_num_threads = a.threads
so.inter_op_num_threads = 1
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
sess = ort.InferenceSession(os.path.join(a.model_dir, "onnx", "model.onnx"), so, providers=["CPUExecutionProvider"])
inputs = {i.name for i in sess.get_inputs()}
texts = json.load(open(a.passages))


def embed(batch):
    encs = tok.encode_batch(batch)
    width = max(len(e.ids) for e in encs)
    ids = np.zeros((len(batch), width), np.int64)
    mask = np.zeros((len(batch), width), np.int64)
    for r, e in enumerate(encs):
        ids[r, : len(e.ids)] = e.ids
        mask[r, : len(e.ids)] = 1
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    hidden = sess.run(["last_hidden_state"], {k: v for k, v in feeds.items() if k in inputs})[0]
    m = mask[..., None].astype(np.float32)
    v = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


embed(texts[: a.batch])  # warm-up, as the server's load does one call
t0 = time.perf_counter()
out = np.concatenate([embed(texts[s : s + a.batch]) for s in range(0, len(texts), a.batch)])
seconds = time.perf_counter() - t0
json.dump({"seconds": seconds, "texts": len(texts), "first": out[:20].tolist()}, open(a.out, "w"))
