import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_DIRECT_UPLOAD_BYTES } from '#commons/contract';
import type { StatusRecord } from '#core/job';
import type { OPTION_FIELDS } from '#core/options';
import { wordErrorRate } from '#local/evaluation/metrics';
import { type RuntimeProcess, startRuntimeProcess } from '#test/helpers/runtime-process';
import { findSample, type Sample, samplePath, samplesOfKind } from '#test/helpers/samples';
import type { SubmitBody } from '#test/helpers/submissions';

const API_KEY = 'e2e-key-0123456789abcdef';

let runtime: RuntimeProcess;
let baseUrl: string;

beforeAll(async () => {
  runtime = await startRuntimeProcess(API_KEY);
  baseUrl = runtime.baseUrl;
});

afterAll(() => runtime?.stop());

const url = (path: string, query: Record<string, string> = {}) => runtime.url(path, query);
const submitFile = (file: Uint8Array, fields: Record<string, string> = {}) => runtime.submit(file, fields);
const submitSample = async (sample: Sample, fields: Record<string, string> = {}) =>
  submitFile(await readFile(samplePath(sample)), fields);

/** A status record as polling reads it, always with a known status. */
async function finished(id: string): Promise<StatusRecord> {
  const record = await runtime.finished(id);
  expect(['queued', 'processing', 'completed', 'error']).toContain(record.status);
  return record;
}

async function transcribed(sample: Sample, fields: Record<string, string> = {}) {
  const submitted = await submitSample(sample, fields);
  expect(submitted.status).toBe(200);
  expect(submitted.body.status).toBe('queued');
  return finished(submitted.body.id ?? '');
}

describe('the local runtime over HTTP', () => {
  it('prints the API key and a ready curl example', () => {
    expect(runtime.output()).toContain(API_KEY);
    expect(runtime.output()).toContain('curl -F audio=@');
  });

  it('transcribes the quick-start recording with a word error rate under 35%', async () => {
    const sample = findSample((entry) => entry.id === 'ljspeech_LJ001-0001');
    const record = await transcribed(sample);
    expect(record.status).toBe('completed');
    const results = record.results?.results;
    if (!results) throw new Error(JSON.stringify(record));
    expect(wordErrorRate(sample.reference_text ?? '', results.transcript)).toBeLessThan(0.35);
    expect(results.words.length).toBeGreaterThan(10);
    for (const word of results.words) {
      expect(Number.isInteger(word.startTime) && word.endTime >= word.startTime).toBe(true);
    }
  });

  it('transcribes compressed audio and video containers about as well as the WAV they were made from', async () => {
    const containers = samplesOfKind('format').filter((sample) => /\.(mp3|mp4)$/.test(sample.file));
    expect(containers.length).toBe(2);
    for (const container of containers) {
      const source = findSample(
        (sample) => sample.kind === 'utterance' && (container.source ?? '').includes(sample.file),
      );
      const [fromContainer, fromSource] = await Promise.all([transcribed(container), transcribed(source)]);
      expect(fromContainer.status).toBe('completed');
      const reference = container.reference_text ?? '';
      const containerWer = wordErrorRate(reference, fromContainer.results?.results.transcript ?? '');
      const sourceWer = wordErrorRate(reference, fromSource.results?.results.transcript ?? '');
      expect(containerWer, container.file).toBeLessThanOrEqual(sourceWer + 0.15);
    }
  });

  it('mixes a two-channel file down when dual_channel is false, and splits it when true', async () => {
    const stereo = findSample((sample) => sample.kind === 'stereo' && (sample.duration_s ?? 0) > 10);
    const [mixed, split] = await Promise.all([
      transcribed(stereo, { dual_channel: 'false' }),
      transcribed(stereo, { dual_channel: 'true' }),
    ]);
    expect(mixed.status).toBe('completed');
    expect(mixed.dual_channel).toBe(false);
    expect(wordErrorRate(stereo.reference_text ?? '', mixed.results?.results.transcript ?? '')).toBeLessThan(
      0.6,
    );
    expect(mixed.results?.results.words.some((word) => word.channel !== undefined)).toBe(false);

    expect(split.status).toBe('completed');
    expect(new Set(split.results?.results.words.map((word) => word.channel))).toEqual(new Set([1, 2]));
  });

  it('echoes custom and webhook_url, and gives lower-case text without marks for punctuate=false', async () => {
    const sample = samplesOfKind('utterance')[6] as Sample;
    const fields = {
      punctuate: 'false',
      custom: 'ticket #7 — ünïcode',
      webhook_url: 'https://example.com/hook',
    };
    const submitted = await submitSample(sample, fields);
    expect(submitted.body).toMatchObject({
      punctuate: 'false',
      custom: fields.custom,
      webhook_url: fields.webhook_url,
    });
    const record = await finished(submitted.body.id ?? '');
    expect(record).toMatchObject({
      status: 'completed',
      punctuate: false,
      custom: fields.custom,
      webhook_url: fields.webhook_url,
    });
    const transcript = record.results?.results.transcript ?? '';
    expect(transcript.length).toBeGreaterThan(0);
    expect(transcript).toBe(transcript.toLowerCase());
    expect(transcript).not.toMatch(/[.,?!]/);
  });

  it('tells the speakers of a conversation apart with speaker_diarization', async () => {
    const conversation = findSample((sample) => sample.kind === 'conversation');
    const [plain, diarized] = await Promise.all([
      transcribed(conversation),
      transcribed(conversation, { speaker_diarization: 'true' }),
    ]);
    const words = diarized.results?.results.words ?? [];
    expect(new Set(words.map((word) => word.speaker))).toEqual(new Set(['S1', 'S2']));
    expect(words[0]?.speaker).toBe('S1');
    const turns = diarized.results?.results.utterances ?? [];
    expect(turns.length).toBeGreaterThanOrEqual(3);
    expect(turns.map((turn) => turn.text).join(' ')).toBe(diarized.results?.results.transcript);
    expect(plain.results?.results.words.some((word) => word.speaker !== undefined)).toBe(false);
  });

  it('adds tldr and short_hand_notes only when asked, keeping the full transcript', async () => {
    const long = samplesOfKind('utterance').filter((sample) => (sample.duration_s ?? 0) > 8)[0] as Sample;
    const [summarized, plain] = await Promise.all([
      transcribed(long, { tldr: 'true', short_hand_notes: 'true' }),
      transcribed(long),
    ]);
    const results = summarized.results?.results;
    expect(results?.transcript).toBe(plain.results?.results.transcript);
    expect(results?.tldr?.length).toBeGreaterThan(0);
    expect(results?.tldr?.length).toBeLessThanOrEqual(results?.transcript.length ?? 0);
    expect(results?.short_hand_notes).toMatch(/^- \S/);
    expect(plain.results?.results).not.toHaveProperty('tldr');
    expect(plain.results?.results).not.toHaveProperty('short_hand_notes');
  });

  it('ends a one-channel file sent with dual_channel=true in error not_dual_channel', async () => {
    const record = await transcribed(samplesOfKind('utterance')[0] as Sample, { dual_channel: 'true' });
    expect(record).toMatchObject({ status: 'error', error: { code: 'not_dual_channel' } });
  });

  it('gives every bad file its expected outcome and stays healthy', async () => {
    const outcomes = await Promise.all(
      samplesOfKind('bad').map(async (sample) => {
        const submitted = await submitSample(sample);
        if (submitted.status !== 200) return { sample, submitted, record: undefined };
        return { sample, submitted, record: await finished(submitted.body.id ?? '') };
      }),
    );
    for (const { sample, submitted, record } of outcomes) {
      const label = `${sample.file}: ${JSON.stringify(record ?? submitted.body).slice(0, 300)}`;
      switch (sample.expect) {
        case 'error':
          // An empty upload is refused at once; anything else uploaded ends as a job in error.
          if (submitted.status === 400) expect(submitted.body.error?.code, label).toBe('missing_audio');
          else expect(record?.status, label).toBe('error');
          if (record) expect(record.error?.code, label).toMatch(/^(unsupported_media|no_audio)$/);
          break;
        case 'error_or_partial':
          expect(['completed', 'error'], label).toContain(record?.status);
          break;
        case 'empty_transcript':
          expect(record?.status, label).toBe('completed');
          expect(record?.results?.results.transcript, label).toBe('');
          expect(record?.results?.results.words, label).toEqual([]);
          break;
        default:
          throw new Error(`Unknown expectation for ${sample.file}`);
      }
    }
    expect((await fetch(`${baseUrl}/health`)).status).toBe(200);
    const after = await transcribed(samplesOfKind('utterance')[1] as Sample);
    expect(after.status).toBe('completed');
  });

  it('answers every invalid option value with a 400 naming the field', async () => {
    const audio = await readFile(samplePath(samplesOfKind('utterance')[0] as Sample));
    const invalid: Record<(typeof OPTION_FIELDS)[number], string> = {
      dual_channel: 'stereo',
      punctuate: 'yes',
      speaker_diarization: '2',
      tldr: 'on',
      short_hand_notes: 'TRUEISH',
      language: 'esEs',
      webhook_url: 'ftp://example.com/hook',
      custom: 'x'.repeat(4097),
      speakers_expected: '11',
      retention_days: '90',
    };
    for (const [field, value] of Object.entries(invalid)) {
      const { status, body } = await submitFile(audio, { [field]: value });
      expect(status, field).toBe(400);
      expect(body.error?.field, field).toBe(field);
      expect(body.error?.code, field).toMatch(/^(invalid_option|unsupported_language)$/);
    }
  });

  it('refuses requests without a valid key; with the authorizer cache on, as on AWS, a header alone is not enough', async () => {
    const status = `${baseUrl}/v1-beta/transcript/status?id=x`;
    const missing = await fetch(status);
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as SubmitBody).error?.code).toBe('missing_api_key');
    const invalid = await fetch(`${status}&x-api-key=wrong-key-000000000`);
    expect(((await invalid.json()) as SubmitBody).error?.code).toBe('invalid_api_key');
    const header = await fetch(status, { headers: { 'x-api-key': API_KEY } });
    expect(header.status).toBe(401);
    expect(((await header.json()) as SubmitBody).error?.code).toBe('missing_api_key');
    expect((await fetch(url('/v1-beta/transcript/status', { id: 'x' }))).status).toBe(404);
  });

  it('answers a body cut off in the middle of the file with a 400 and stays up', async () => {
    const form = new FormData();
    form.append(
      'audio',
      new Blob([await readFile(samplePath(samplesOfKind('utterance')[0] as Sample))]),
      'a.wav',
    );
    const request = new Request('http://x/', { method: 'POST', body: form });
    const body = Buffer.from(await request.arrayBuffer());
    const cut = await fetch(url('/v1-beta/transcript'), {
      method: 'POST',
      headers: { 'content-type': request.headers.get('content-type') ?? '' },
      body: body.subarray(0, Math.floor(body.length / 2)),
    });
    expect(cut.status).toBe(400);
    expect(((await cut.json()) as SubmitBody).error?.code).toBe('invalid_request');
    expect((await fetch(`${baseUrl}/health`)).status).toBe(200);
    const after = await transcribed(samplesOfKind('utterance')[2] as Sample);
    expect(after.status).toBe('completed');
  });

  it('answers 415 for a non-multipart body and 413 above the direct-upload limit', async () => {
    const json = await fetch(url('/v1-beta/transcript'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(json.status).toBe(415);
    const big = await submitFile(new Uint8Array(MAX_DIRECT_UPLOAD_BYTES + 1));
    expect(big.status).toBe(413);
    expect(big.body.error?.code).toBe('payload_too_large');
  });

  it('never writes the API key into a log line, although every request carried it in the query string', () => {
    const banner = 'Press Ctrl-C to stop.';
    const output = runtime.output();
    expect(output).toContain(banner);
    const logs = output.slice(output.indexOf(banner) + banner.length);
    expect(logs).toContain('GET /v1-beta/transcript/status 200');
    expect(logs).not.toContain(API_KEY);
  });
});
