import { startLocalRuntime } from './runtime.ts';
import { readLocalSettings } from './settings.ts';

/** `npm start`: the whole service on this machine, with in-memory emulators. */
const runtime = await startLocalRuntime(readLocalSettings());

const sample = '../shared/samples/utterances/ljspeech_LJ001-0001.wav';
console.log(`
Transcription service listening on ${runtime.url}
Emulators keep their data in memory: jobs, audio and keys are gone when this process stops.

API key (tenant "local"): ${runtime.apiKey}
Webhook signing secret (tenant "local"): ${runtime.webhookSecret}
  (webhooks go to this machine only, for example webhook_url=http://localhost:8080/hook)
API reference: ${runtime.url}/reference

  curl -F audio=@${sample} "${runtime.url}/v1-beta/transcript?x-api-key=${runtime.apiKey}"
  curl "${runtime.url}/v1-beta/transcript/status?id=JOB_ID&x-api-key=${runtime.apiKey}"

Press Ctrl-C to stop.
`);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    console.log('Stopping…');
    runtime.stop().then(() => process.exit(0));
  });
}
