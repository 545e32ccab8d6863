import { createOllamaModel, createOpenAiModel, type ChatModel } from '@codefleet/agents';
import type { RouterConfig } from '@codefleet/config';

/** A model server as `router.classifier` and `router.chat` describe it. */
export interface LocalModelSpec {
  provider: 'ollama' | 'openai';
  /** Server URL (ollama) or API base including the version (openai). */
  host: string;
  model: string;
  apiKey?: string;
}

/** Makes the client of a model server; injected so tests can count or refuse the calls. */
export type ModelFactory = (spec: LocalModelSpec) => ChatModel;

/** The real clients: Ollama's native API or an OpenAI-compatible one. */
export const defaultModelFactory: ModelFactory = (spec) =>
  spec.provider === 'ollama'
    ? createOllamaModel({
        host: spec.host,
        model: spec.model,
        ...(spec.apiKey === undefined ? {} : { apiKey: spec.apiKey }),
      })
    : createOpenAiModel({
        baseUrl: spec.host,
        model: spec.model,
        ...(spec.apiKey === undefined ? {} : { apiKey: spec.apiKey }),
      });

/** The spec of `router.classifier` or `router.chat`. */
export function modelSpecOf(section: RouterConfig['classifier'] | RouterConfig['chat']): LocalModelSpec {
  return {
    provider: section.provider,
    host: section.host,
    model: section.model,
    ...(section.api_key === undefined ? {} : { apiKey: section.api_key }),
  };
}
