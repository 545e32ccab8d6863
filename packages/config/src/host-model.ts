import { delimiter, join } from 'node:path';

/** `agents.ollama.model: auto` (the default): the model is picked for the host, see {@link localModelFor}. */
export const AUTO_MODEL = 'auto';
/** The model `auto` picks on a CPU-only host (CW 4.1): small enough to answer in minutes there. */
export const CPU_MODEL = 'qwen2.5-coder:1.5b';
/** The model `auto` picks on Apple silicon or with a GPU. */
export const ACCELERATED_MODEL = 'qwen2.5-coder:7b';

/** What the host offers a local model, as {@link detectHardware} found it. */
export interface HostHardware {
  platform: string;
  arch: string;
  /** What showed a GPU (`/dev/nvidia0`, `/dev/kfd`, `nvidia-smi on PATH`); absent: none found. */
  gpu?: string;
}

/** How `agents.ollama.model` was chosen, for `doctor` and the logs. */
export interface LocalModelChoice {
  model: string;
  reason: string;
}

/** What {@link detectHardware} looks at; the real process by default in `loadConfig`, anything in tests. */
export interface HardwareProbe {
  platform: string;
  arch: string;
  /** Whether a path exists (a device node, a file on PATH). */
  exists(path: string): boolean;
  /** `$PATH`, to look for `nvidia-smi`. */
  path?: string | undefined;
}

// NVIDIA's device node, AMD ROCm's compute node: what Ollama itself needs to use the GPU
// (a container sees them only when the GPU is passed through).
const gpuDevices = ['/dev/nvidia0', '/dev/kfd'];

/**
 * The host's hardware as far as a local model cares: Apple silicon (darwin arm64, Metal), or
 * a GPU (NVIDIA or AMD device node, or `nvidia-smi` on PATH). It only looks; it never runs
 * anything. It probes the worker's host: an Ollama server elsewhere may differ (name the model).
 */
export function detectHardware(probe: HardwareProbe): HostHardware {
  const base = { platform: probe.platform, arch: probe.arch };
  const device = gpuDevices.find((path) => probe.exists(path));
  if (device !== undefined) return { ...base, gpu: device };
  const dirs = (probe.path ?? '').split(delimiter).filter((dir) => dir !== '');
  if (dirs.some((dir) => probe.exists(join(dir, 'nvidia-smi')))) return { ...base, gpu: 'nvidia-smi on PATH' };
  return base;
}

/**
 * The model `auto` stands for on `hardware`: {@link ACCELERATED_MODEL} on Apple silicon or
 * with a GPU, {@link CPU_MODEL} otherwise. Without `hardware` (a caller that did not probe the
 * host, as `parseConfig` alone) it is {@link ACCELERATED_MODEL}, the default before `auto`.
 */
export function localModelFor(hardware: HostHardware | undefined): LocalModelChoice {
  if (hardware === undefined) return { model: ACCELERATED_MODEL, reason: 'auto: host hardware not probed' };
  if (hardware.platform === 'darwin' && hardware.arch === 'arm64')
    return { model: ACCELERATED_MODEL, reason: 'auto: Apple silicon (darwin arm64)' };
  if (hardware.gpu !== undefined) return { model: ACCELERATED_MODEL, reason: `auto: GPU found (${hardware.gpu})` };
  return {
    model: CPU_MODEL,
    reason: `auto: no GPU found on this ${hardware.platform} ${hardware.arch} host (CPU only)`,
  };
}
