import { invalid, type FieldError } from '../errors.ts';
import type { Deps } from './deps.ts';
import { utf8Bytes } from './validate.ts';

export async function generate(deps: Deps, input: { text: string; model_name?: string }) {
  const modelName = input.model_name ?? deps.config.defaultModel;
  const embedder = deps.models.get(modelName, '/querystring/model_name');
  if (utf8Bytes(input.text) > deps.config.limits.textBytes) {
    throw invalid([{ path: '/querystring/text', message: `must be at most ${deps.config.limits.textBytes} bytes` }]);
  }
  const [vector] = await embedder.embed([input.text]);
  return { model_name: modelName, dimension: vector.length, vector: Array.from(vector) };
}

/** OpenAI-compatible: lets LangChain, LlamaIndex and the openai package use this service as their embedder. */
export async function openaiEmbeddings(deps: Deps, input: { input: string | string[] | number[] | number[][]; model?: string; encoding_format?: 'float' | 'base64' }) {
  if (typeof input.input !== 'string' && input.input.some((x) => typeof x !== 'string')) {
    // OpenAI's clients send tiktoken ids when told to (LangChain's OpenAIEmbeddings does by
    // default); they mean nothing to this model's WordPiece vocabulary.
    throw invalid([{ path: '/body/input', message: "token ids are not accepted: they come from another model's tokenizer (OpenAI's tiktoken); send the texts (LangChain: OpenAIEmbeddings(check_embedding_ctx_length=False))" }]);
  }
  const texts = typeof input.input === 'string' ? [input.input] : (input.input as string[]);
  const errors: FieldError[] = [];
  if (texts.length === 0) errors.push({ path: '/body/input', message: 'must hold at least one text' });
  if (texts.length > deps.config.limits.embeddingInputs) errors.push({ path: '/body/input', message: `must hold at most ${deps.config.limits.embeddingInputs} texts` });
  texts.forEach((t, i) => {
    if (utf8Bytes(t) > deps.config.limits.textBytes) errors.push({ path: typeof input.input === 'string' ? '/body/input' : `/body/input/${i}`, message: `must be at most ${deps.config.limits.textBytes} bytes` });
  });
  if (errors.length) throw invalid(errors);
  const model = input.model ?? deps.config.defaultModel;
  const embedder = deps.models.get(model, '/body/model');
  // Many texts in one call are documents being embedded (bulk): queries keep the way ahead of them.
  const { vectors, tokens } = await embedder.embedWithUsage(texts, { bulk: texts.length > 1 });
  const total = tokens.reduce((a, b) => a + b, 0);
  return {
    object: 'list' as const,
    data: vectors.map((v, index) => ({
      object: 'embedding' as const,
      index,
      embedding: input.encoding_format === 'base64' ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') : Array.from(v),
    })),
    model,
    usage: { prompt_tokens: total, total_tokens: total },
  };
}
