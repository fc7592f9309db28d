import { fileURLToPath } from 'node:url';
import type { Duration } from 'aws-cdk-lib';
import { Architecture, LoggingFormat, Runtime } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { DEPLOYED_LOG_LEVEL, ENV, type EnvName } from '#commons/contract';

/**
 * The repository's root, with a trailing separator, from the URL of a module two folders below it.
 * `fileURLToPath` decodes the URL: a checkout under `My Projects/` would otherwise become
 * `My%20Projects/`, a folder that does not exist.
 */
export function repositoryRoot(moduleUrl: string): string {
  return fileURLToPath(new URL('../../', moduleUrl));
}

export const REPO_ROOT = repositoryRoot(import.meta.url);

/** A function's settings from the contract; resource names come through the `bind*` helpers. */
export type FunctionEnvironment = Partial<Record<EnvName, string>>;

/** The variables every function of the service gets: its name in the logs and the deployed log level. */
export function baseEnvironment(serviceName: string): FunctionEnvironment {
  return { [ENV.serviceName]: serviceName, [ENV.logLevel]: DEPLOYED_LOG_LEVEL };
}

export interface ServiceFunctionProps {
  /** Path of the handler module from the repository root, e.g. `functions/api/submit.ts`. */
  entry: string;
  description: string;
  /** The function's name in its logs (POWERTOOLS_SERVICE_NAME). */
  serviceName: string;
  timeout: Duration;
  memorySize: number;
  environment?: FunctionEnvironment;
}

/** Settings every Lambda of the service shares: Node.js 22 on arm64, JSON logs kept 90 days. */
export const FUNCTION_DEFAULTS = {
  architecture: Architecture.ARM_64,
  loggingFormat: LoggingFormat.JSON,
  logRetention: RetentionDays.THREE_MONTHS,
};

/** A handler of `functions/`, bundled by the locally installed esbuild (no Docker) as one ES module. */
export class ServiceFunction extends NodejsFunction {
  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    super(scope, id, {
      entry: `${REPO_ROOT}${props.entry}`,
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: `${REPO_ROOT}package-lock.json`,
      runtime: Runtime.NODEJS_22_X,
      architecture: FUNCTION_DEFAULTS.architecture,
      description: props.description,
      timeout: props.timeout,
      memorySize: props.memorySize,
      loggingFormat: FUNCTION_DEFAULTS.loggingFormat,
      logGroup: new LogGroup(scope, `${id}Logs`, { retention: FUNCTION_DEFAULTS.logRetention }),
      environment: {
        NODE_OPTIONS: '--enable-source-maps',
        ...baseEnvironment(props.serviceName),
        ...props.environment,
      },
      bundling: {
        format: OutputFormat.ESM,
        target: 'node22',
        minify: true,
        sourceMap: true,
        // Bundle the SDK too, so that the deployed code runs the versions that were tested.
        externalModules: [],
        mainFields: ['module', 'main'],
        banner:
          "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
        forceDockerBundling: false,
      },
    });
  }
}
