import { WhisperRecognizer } from '#speech/whisper';

const r = new WhisperRecognizer('../shared/models/for-tests-ggml-tiny.en.bin', {
  beamSize: Number(process.env.BEAM ?? 5),
});
for (const f of process.argv.slice(2)) {
  const t = Date.now();
  const words = await r.recognize(f);
  console.log(f, Date.now() - t, 'ms', JSON.stringify(words).slice(0, 500));
}
await r.close();
