import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { z } from 'zod';
import { buildConsoleAssets } from '#console/build';
import { acknowledgeNagFindings } from './nag.ts';
import { type ServiceSettings, TranscriptionStack } from './stack.ts';

const contextNumber = (fallback: number) => z.coerce.number().int().nonnegative().default(fallback);

/** Context values (`-c name=value` or cdk.json), checked before anything is built. */
const settingsSchema = z
  .object({
    engine: z.enum(['transcribe', 'sphinx']).default('transcribe'),
    summarizer: z.enum(['local', 'bedrock']).default('local'),
    bedrockModelId: z.string().min(1).optional(),
    workerConcurrency: contextNumber(10),
    authorizerCacheSeconds: contextNumber(300).pipe(z.number().max(3600)),
    throttlingRateLimit: contextNumber(50),
    throttlingBurstLimit: contextNumber(100),
    corsAllowedOrigins: z
      .string()
      .default('*')
      .transform((value) => value.split(',').map((origin) => origin.trim())),
    alarmEmail: z.email().optional(),
    maxQueueAgeSeconds: contextNumber(1800),
  })
  .refine((settings) => settings.summarizer !== 'bedrock' || settings.bedrockModelId, {
    message: 'summarizer=bedrock needs -c bedrockModelId=…',
  });

export function readSettings(app: App): ServiceSettings {
  const raw = Object.fromEntries(
    Object.keys(settingsSchema.shape)
      .map((name) => [name, app.node.tryGetContext(name)])
      .filter(([, value]) => value !== undefined),
  );
  return settingsSchema.parse(raw) as ServiceSettings;
}

export function buildApp(app = new App()): { app: App; stack: TranscriptionStack } {
  // The console handler bundles the page's assets: build them from the current sources first.
  buildConsoleAssets();
  const stack = new TranscriptionStack(app, app.node.tryGetContext('stackName') ?? 'TranscriptionService', {
    settings: readSettings(app),
    description: 'Asynchronous audio transcription service',
  });
  acknowledgeNagFindings(stack);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { app, stack };
}

// Synthesise when run by the CDK CLI (`app` in cdk.json), not when imported by the stack tests.
if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) buildApp().app.synth();
