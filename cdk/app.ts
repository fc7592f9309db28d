import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import {
  DEPLOYMENT_SETTING_NAMES,
  type DeploymentSettings,
  deploymentSettingsSchema,
} from '#commons/contract';
import { buildConsoleAssets } from '#console/build';
import { acknowledgeNagFindings } from './nag.ts';
import { TranscriptionStack } from './stack.ts';

/** The deployment settings from the CDK context (`-c name=value` or cdk.json), checked before anything is built. */
function readSettings(app: App): DeploymentSettings {
  const given = DEPLOYMENT_SETTING_NAMES.map((name) => [name, app.node.tryGetContext(name)] as const);
  return deploymentSettingsSchema.parse(Object.fromEntries(given.filter(([, value]) => value !== undefined)));
}

export function buildApp(app = new App()): { app: App; stack: TranscriptionStack } {
  // The console handler bundles the page's assets: build them from the current sources first.
  buildConsoleAssets();
  const stack = new TranscriptionStack(app, {
    settings: readSettings(app),
    description: 'Asynchronous audio transcription service',
  });
  acknowledgeNagFindings(stack);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { app, stack };
}

// Synthesise when run by the CDK CLI (`app` in cdk.json), not when imported by the stack tests.
if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) buildApp().app.synth();
