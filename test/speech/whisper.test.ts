import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readServiceConfig } from '#aws/config';
import { ENV } from '#commons/contract';
import { parseJobOptions } from '#core/options';
import type { TimedWord } from '#core/result';
import { LocalTranscriber } from '#speech/local-transcriber';
import { decodeToWav } from '#speech/media';
import type { Recognizer } from '#speech/recognizer';
import { wavDurationMs } from '#speech/wav';
import { WhisperRecognizer } from '#speech/whisper';
import { WhisperModelError } from '#speech/whisper-models';
import { findSample, samplePath } from '#test/helpers/samples';
import { checkEngineSetup, createTranscriber } from '#worker/transcribers';

/**
 * The real whisper engine (whisper.cpp compiled by smart-whisper) with whisper.cpp's own test model:
 * the tiny.en architecture without trained weights. It loads and runs as a real model does (the
 * encoder over a 30 s window, the decoder, the fallbacks) but writes no text, so these tests prove
 * the code path, the shapes and the failure handling, never accuracy: no trained model can be
 * installed on this project's machines. Mapping real output to words is tested in
 * test/unit/whisper-output.test.ts.
 */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TEST_MODEL = join(ROOT, '..', 'shared', 'models', 'for-tests-ggml-tiny.en.bin');

const utterance = findSample((sample) => sample.kind === 'utterance' && (sample.duration_s ?? 0) > 3);
const short = findSample((sample) => sample.kind === 'utterance' && (sample.duration_s ?? 0) < 3);
const stereo = findSample((sample) => sample.kind === 'stereo' && sample.channels === 2);
const noise = findSample((sample) => sample.kind === 'bad' && sample.expect === 'empty_transcript');

const whisper = new WhisperRecognizer(TEST_MODEL);
afterAll(() => whisper.close());

/** The recognizer, counting the pieces it is given. */
function counted(recognizer: Recognizer): { recognizer: Recognizer; pieces: string[] } {
  const pieces: string[] = [];
  return {
    pieces,
    recognizer: {
      name: recognizer.name,
      punctuates: true,
      maxPieceMs: recognizer.maxPieceMs,
      recognize: (file) => {
        pieces.push(file);
        return recognizer.recognize(file);
      },
    },
  };
}

function expectWellFormed(words: TimedWord[], durationMs: number): void {
  words.forEach((word, index) => {
    expect(word.text.trim()).not.toBe('');
    expect(word.startMs).toBeGreaterThanOrEqual(index > 0 ? (words[index - 1]?.startMs ?? 0) : 0);
    expect(word.endMs).toBeGreaterThanOrEqual(word.startMs);
    expect(word.endMs).toBeLessThanOrEqual(durationMs);
    expect(word.confidence).toBeGreaterThanOrEqual(0);
    expect(word.confidence).toBeLessThanOrEqual(1);
  });
}

let workDir: string;
beforeEach(() => {
  workDir = mkdtempSync(join(tmpdir(), 'whisper-test-'));
});
afterEach(() => rmSync(workDir, { recursive: true, force: true }));

describe('the whisper recognizer on whisper.cpp test model', () => {
  it('checks the model when made, and runs whisper.cpp over a speech file: words in the piece, in order', async () => {
    expect(whisper.model).toMatchObject({ layers: { audio: 4, text: 4 }, multilingual: false, tensors: 0 });
    const [wav = ''] = await decodeToWav(samplePath(utterance), workDir);
    const words = await whisper.recognize(wav);
    // The untrained weights write nothing; a trained model's words would have to pass the same checks.
    expect(words).toEqual([]);
    expectWellFormed(words, await wavDurationMs(wav));
  });

  it('runs recognitions given at once one after another, and gives nothing for a file without samples', async () => {
    const [wav = ''] = await decodeToWav(samplePath(utterance), workDir);
    const empty = join(workDir, 'empty.wav');
    const header = readFileSync(wav).subarray(0, 44);
    header.writeUInt32LE(36, 4);
    header.writeUInt32LE(0, 40);
    writeFileSync(empty, header);
    const results = await Promise.all([
      whisper.recognize(wav),
      whisper.recognize(empty),
      whisper.recognize(wav),
    ]);
    expect(results).toEqual([[], [], []]);
  });

  it('refuses audio that is not 16 kHz mono 16-bit PCM', async () => {
    const stereoWav = join(workDir, 'stereo.wav');
    copyFileSync(samplePath(stereo), stereoWav);
    await expect(whisper.recognize(stereoWav)).rejects.toThrow(/16 kHz mono 16-bit/);
  });
});

describe('the whisper engine in the pipeline', () => {
  it('transcribes speech through voice activity, whisper, and assembly, naming the engine', async () => {
    const { recognizer, pieces } = counted(whisper);
    const transcriber = new LocalTranscriber(recognizer);
    const result = await transcriber.transcribe({
      audioFile: samplePath(utterance),
      workDir,
      options: parseJobOptions({ speaker_diarization: 'true' }),
    });
    expect(pieces.length).toBeGreaterThan(0);
    expect(result).toMatchObject({ engine: 'whisper', transcript: '', words: [] });
    expect(Math.abs(result.audio_duration_ms - (utterance.duration_s ?? 0) * 1000)).toBeLessThan(100);
  });

  it('never runs whisper on audio without speech: the voice activity gate answers first', async () => {
    const { recognizer, pieces } = counted(whisper);
    const result = await new LocalTranscriber(recognizer).transcribe({
      audioFile: samplePath(noise),
      workDir,
      options: parseJobOptions({}),
    });
    expect(pieces).toEqual([]);
    expect(result.words).toEqual([]);
  });

  it('is what the worker runs for ENGINE=whisper', async () => {
    const config = { ...readServiceConfig({}), engine: 'whisper' as const, whisperModel: TEST_MODEL };
    const transcriber = createTranscriber(config, {} as never);
    if (!(transcriber instanceof LocalTranscriber)) throw new Error('expected the local transcriber');
    const result = await transcriber.transcribe({
      audioFile: samplePath(short),
      workDir,
      options: parseJobOptions({ punctuate: 'false' }),
    });
    expect(result).toMatchObject({ engine: 'whisper', words: [] });
  });
});

describe('a missing or corrupt whisper model', () => {
  const config = (model?: string) => ({
    ...readServiceConfig({}),
    engine: 'whisper' as const,
    ...(model ? { whisperModel: model } : {}),
  });

  it('is refused when the recognizer is made, with a message that names the file', () => {
    const truncated = join(workDir, 'truncated.bin');
    writeFileSync(truncated, readFileSync(TEST_MODEL).subarray(0, 300_000));
    const padded = join(workDir, 'padded.bin');
    writeFileSync(padded, Buffer.concat([readFileSync(TEST_MODEL), Buffer.from('trailing')]));
    const page = join(workDir, 'page.bin');
    writeFileSync(page, '<!doctype html><title>Not found</title>');
    for (const [file, message] of [
      [join(workDir, 'nothing.bin'), /does not exist/],
      [truncated, /ends early/],
      [padded, /ends early|malformed/],
      [page, /not a ggml whisper model/],
    ] as const) {
      expect(() => new WhisperRecognizer(file)).toThrow(WhisperModelError);
      expect(() => checkEngineSetup(config(file))).toThrow(message);
    }
    expect(() => checkEngineSetup(config())).toThrow(/engine whisper needs WHISPER_MODEL/);
    expect(() => checkEngineSetup({ ...config(), engine: 'sphinx' })).not.toThrow();
  });

  const startWorker = (env: Record<string, string>) =>
    new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        join(ROOT, 'node_modules', '.bin', 'tsx'),
        ['-e', "import('#worker/handler').then(() => console.log('started'))"],
        { cwd: ROOT, env: { ...process.env, ...env } },
        (error, _stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stderr }),
      );
    });

  it('stops the worker as it starts (as a Lambda init error), before any job; a good model lets it start', async () => {
    const missing = await startWorker({
      [ENV.engine]: 'whisper',
      [ENV.whisperModel]: join(workDir, 'gone.bin'),
    });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain(`The whisper model ${join(workDir, 'gone.bin')} does not exist`);
    expect(await startWorker({ [ENV.engine]: 'whisper', [ENV.whisperModel]: TEST_MODEL })).toMatchObject({
      code: 0,
    });
  });
});
