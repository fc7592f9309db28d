import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JobFailure } from '#core/errors';
import { parseJobOptions } from '#core/options';
import { wordErrorRate } from '#local/evaluation/metrics';
import type { Diarizer } from '#speech/diarization';
import { cutAround, LocalTranscriber } from '#speech/local-transcriber';
import { decodeToWav, probeMedia } from '#speech/media';
import { SphinxRecognizer } from '#speech/sphinx';
import { detectSpeech, type SpeechRegion } from '#speech/vad';
import { detectVoicing, keepVoicedWords, keepVoicedWordsIn } from '#speech/voicing';
import { readWavLayout, wavDurationMs, writeWavSlice } from '#speech/wav';
import {
  diarizationSamples,
  findSample,
  type Sample,
  samplePath,
  samplesOfKind,
} from '#test/helpers/samples';

let workDir: string;
beforeEach(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'speech-test-'));
});
afterEach(async () => {
  await rm(workDir, { recursive: true, force: true });
});

const transcriber = new LocalTranscriber(new SphinxRecognizer());
const transcribe = (sample: Sample, fields: Record<string, string> = {}) =>
  transcriber.transcribe({ audioFile: samplePath(sample), workDir, options: parseJobOptions(fields) });

async function failureOf(promise: Promise<unknown>): Promise<JobFailure> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof JobFailure) return error;
    throw error;
  }
  throw new Error('expected a JobFailure');
}

describe('media probing and decoding', () => {
  it.each(samplesOfKind('format').map((sample) => [sample.file, sample]))(
    'decodes %s to 16 kHz mono 16-bit WAV of the same length',
    async (_file, sample) => {
      const info = await probeMedia(samplePath(sample));
      const [wav = ''] = await decodeToWav(samplePath(sample), workDir);
      expect(await readWavLayout(wav)).toMatchObject({ sampleRate: 16_000, channels: 1, bitsPerSample: 16 });
      expect(Math.abs((await wavDurationMs(wav)) - (info.durationMs ?? 0))).toBeLessThan(100);
    },
  );

  it('finds the audio stream of a video file beside its video track', async () => {
    const video = findSample((sample) => sample.kind === 'format' && sample.file.endsWith('.mp4'));
    const info = await probeMedia(samplePath(video));
    expect(info.channels).toBe(1);
    expect(info.durationMs).toBeGreaterThan(1000);
  });

  it('splits a two-channel file into one WAV per channel', async () => {
    const stereo = findSample((sample) => sample.kind === 'stereo');
    const wavs = await decodeToWav(samplePath(stereo), workDir, [0, 1]);
    expect(wavs).toHaveLength(2);
    for (const wav of wavs)
      expect(await readWavLayout(wav)).toMatchObject({ channels: 1, sampleRate: 16_000 });
  });

  it.each(
    samplesOfKind('bad')
      .filter((sample) => sample.expect === 'error')
      .map((sample) => [sample.file, sample]),
  )('refuses %s as unsupported media', async (_file, sample) => {
    expect((await failureOf(probeMedia(samplePath(sample)))).code).toBe('unsupported_media');
  });
});

describe('voicing', () => {
  it('finds voiced speech in an utterance and none in silence or noise', async () => {
    const voicedShare = async (sample: Sample) => {
      const [wav = ''] = await decodeToWav(samplePath(sample), workDir);
      const track = await detectVoicing(wav);
      return track.voiced.reduce((sum, value) => sum + value, 0) / Math.max(1, track.voiced.length);
    };
    expect(await voicedShare(samplesOfKind('utterance')[5] as Sample)).toBeGreaterThan(0.2);
    for (const sample of samplesOfKind('bad').filter((entry) => entry.expect === 'empty_transcript')) {
      expect(await voicedShare(sample)).toBe(0);
    }
  });

  it('gates words around them alone exactly as the whole track does, to the last sample of the file', async () => {
    // Made-up words of 20 ms to 1 s every 97 ms, from before the start to past the end: their windows cover
    // every frame of the track, the tail's included (the gate judges a frame only while its count is short).
    const wordsOver = (durationMs: number) => [
      ...Array.from({ length: Math.ceil((durationMs + 1200) / 97) }, (_, index) => {
        const startMs = index * 97 - 600;
        return { index, startMs, endMs: startMs + 20 + ((index * 389) % 980) };
      }),
      // Times no recogniser should give: none, reversed, of no length.
      { index: -1, startMs: Number.NaN, endMs: Number.NaN },
      { index: -2, startMs: durationMs / 2, endMs: durationMs / 4 },
      { index: -3, startMs: durationMs / 2, endMs: durationMs / 2 },
    ];
    const files: string[] = [];
    for (const sample of [
      ...samplesOfKind('utterance').slice(0, 3),
      findSample((entry) => entry.kind === 'conversation'),
      ...samplesOfKind('bad').filter((entry) => entry.expect === 'empty_transcript'),
    ]) {
      // Each in a folder of its own: the decoded file's name is always the same.
      const folder = await mkdtemp(join(workDir, 'sample-'));
      files.push(...(await decodeToWav(samplePath(sample), folder)));
    }
    // Lengths around one frame's window (40 ms), odd numbers of samples, and nothing at all.
    const speech = files[0] as string;
    for (const [index, ms] of [0, 9, 25, 40.0625, 41, 333.3125].entries()) {
      const short = join(workDir, `short-${index}.wav`);
      await writeWavSlice(speech, 1000, 1000 + ms, short);
      files.push(short);
    }
    let kept = 0;
    let dropped = 0;
    for (const file of files) {
      const track = await detectVoicing(file);
      const words = wordsOver(await wavDurationMs(file));
      const expected = keepVoicedWords(words, track);
      expect(await keepVoicedWordsIn(file, words)).toEqual(expected);
      kept += expected.length;
      dropped += words.length - expected.length;
    }
    // Both decisions were put to the test.
    expect(kept).toBeGreaterThan(100);
    expect(dropped).toBeGreaterThan(100);
  });
});

describe('LocalTranscriber', () => {
  it('transcribes an utterance with timed, ordered words that spell the transcript', async () => {
    const sample = samplesOfKind('utterance').find((entry) => (entry.duration_s ?? 0) > 5) as Sample;
    const result = await transcribe(sample);
    expect(result.engine).toBe('sphinx');
    expect(Math.abs(result.audio_duration_ms - (sample.duration_s ?? 0) * 1000)).toBeLessThan(100);
    expect(wordErrorRate(sample.reference_text ?? '', result.transcript)).toBeLessThan(0.5);
    expect(result.words.map((word) => word.word).join(' ')).toBe(result.transcript);
    for (const [index, word] of result.words.entries()) {
      expect(Number.isInteger(word.startTime) && Number.isInteger(word.endTime)).toBe(true);
      expect(word.endTime).toBeGreaterThanOrEqual(word.startTime);
      expect(word.confidence).toBeGreaterThanOrEqual(0);
      expect(word.confidence).toBeLessThanOrEqual(1);
      if (index > 0) expect(word.startTime).toBeGreaterThanOrEqual(result.words[index - 1]?.startTime ?? 0);
    }
    expect(result.transcript).toMatch(/^[A-Z].*\.$/);
  });

  it('gives lower-case text without punctuation when punctuate is false', async () => {
    const result = await transcribe(samplesOfKind('utterance')[5] as Sample, { punctuate: 'false' });
    expect(result.transcript.length).toBeGreaterThan(0);
    expect(result.transcript).toBe(result.transcript.toLowerCase());
    expect(result.transcript).not.toMatch(/[.,?!]/);
  });

  it.each(
    samplesOfKind('bad')
      .filter((sample) => sample.expect === 'empty_transcript')
      .map((s) => [s.file, s]),
  )('completes %s with an empty transcript rather than invented words', async (_file, sample) => {
    const result = await transcribe(sample);
    expect(result).toMatchObject({ transcript: '', words: [] });
    expect(result.audio_duration_ms).toBeGreaterThan(0);
  });

  /**
   * Recordings without speech, made here with ffmpeg's lavfi sources at several levels (never committed):
   * PocketSphinx alone invents words in several of them (loud tones, brown noise, music).
   */
  const speechless: [string, string, string?][] = [
    ['digital silence', 'anullsrc=r=16000:cl=mono'],
    ['faint white noise', 'anoisesrc=color=white:amplitude=0.003'],
    ['white noise', 'anoisesrc=color=white:amplitude=0.05'],
    ['loud white noise', 'anoisesrc=color=white:amplitude=0.5'],
    ['pink noise (room tone)', 'anoisesrc=color=pink:amplitude=0.02'],
    ['loud pink noise', 'anoisesrc=color=pink:amplitude=0.3'],
    ['loud brown noise', 'anoisesrc=color=brown:amplitude=0.6'],
    ['quiet 440 Hz tone', 'sine=frequency=440:sample_rate=16000', 'volume=0.05'],
    ['loud 1 kHz tone', 'aevalsrc=0.9*sin(2*PI*1000*t):s=16000'],
    ['mains hum', 'aevalsrc=0.3*sin(2*PI*50*t)+0.15*sin(2*PI*100*t)+0.1*sin(2*PI*150*t):s=16000'],
    ['faint 60 Hz hum', 'aevalsrc=0.01*sin(2*PI*60*t)+0.005*sin(2*PI*180*t):s=16000'],
    [
      'music (changing notes over a swelling chord)',
      'aevalsrc=0.2*sin(2*PI*220*pow(2\\,floor(mod(t*2\\,8))/12)*t)+0.15*sin(2*PI*330*t)*(1+sin(PI*t))/2+0.1*sin(2*PI*440*pow(2\\,floor(mod(t*4\\,5))/12)*t):s=16000',
    ],
    ['breathing (swelling noise)', 'aevalsrc=0.15*(random(0)*2-1)*pow(sin(PI*t/1.5)\\,4):s=16000'],
    [
      'a silent phone line (band-limited hiss through 8 kHz mu-law)',
      'anoisesrc=color=pink:amplitude=0.02',
      'highpass=f=300,lowpass=f=3400,aresample=8000,acodec=pcm_mulaw',
    ],
  ];

  it.each(speechless)(
    'completes %s with an empty transcript on every option',
    async (_name, source, filter) => {
      const file = join(workDir, 'speechless.wav');
      const mulaw = filter?.includes('pcm_mulaw');
      const filters = filter?.replace(/,?acodec=pcm_mulaw/, '');
      execFileSync('ffmpeg', [
        '-v',
        'error',
        '-f',
        'lavfi',
        '-i',
        source,
        '-t',
        '8',
        ...(filters ? ['-af', filters] : []),
        ...(mulaw ? ['-c:a', 'pcm_mulaw'] : ['-ar', '16000', '-c:a', 'pcm_s16le']),
        '-ac',
        '1',
        file,
      ]);
      const variants: Record<string, string>[] = [{}, { speaker_diarization: 'true', punctuate: 'false' }];
      for (const fields of variants) {
        const result = await transcriber.transcribe({
          audioFile: file,
          workDir,
          options: parseJobOptions(fields),
        });
        expect(result).toMatchObject({ transcript: '', words: [] });
        expect(Math.abs(result.audio_duration_ms - 8000)).toBeLessThan(100);
      }
    },
  );

  it('keeps speech: voice activity is found in most of every recording with speech', async () => {
    const speech = [
      ...samplesOfKind('utterance'),
      ...samplesOfKind('format'),
      ...samplesOfKind('conversation'),
      ...diarizationSamples.filter((sample) => sample.kind === 'conversation'),
    ];
    for (const sample of speech) {
      const [wav = ''] = await decodeToWav(samplePath(sample), await mkdtemp(join(workDir, 's-')));
      const regions = await detectSpeech(wav);
      const found = regions.reduce((sum, region) => sum + region.endMs - region.startMs, 0);
      expect(found, sample.id).toBeGreaterThan((await wavDurationMs(wav)) * 0.4);
    }
  }, 300_000);

  it('transcribes each channel of a dual-channel file and labels words and turns with their channel', async () => {
    const stereo = findSample((sample) => sample.kind === 'stereo' && (sample.duration_s ?? 0) > 10);
    const result = await transcribe(stereo, { dual_channel: 'true' });
    const channels = new Set(result.words.map((word) => word.channel));
    expect(channels).toEqual(new Set([1, 2]));
    expect(
      result.words.every((word) => word.speaker === `S${word.channel === result.words[0]?.channel ? 1 : 2}`),
    ).toBe(true);
    expect(result.utterances?.length).toBeGreaterThanOrEqual(2);
    const starts = result.words.map((word) => word.startTime);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
  });

  it('cuts audio into chunks at silences with the same words and times as one chunk', async () => {
    const conversation = findSample(
      (sample) => sample.kind === 'conversation' && (sample.duration_s ?? 0) > 15,
    );
    const options = parseJobOptions({ punctuate: 'false' });
    const whole = await transcribe(conversation, { punctuate: 'false' });
    // Chunks of 5 to 20 s, forced here on a shorter recording.
    const chunked = await new LocalTranscriber(new SphinxRecognizer(), { cut: cutAround(10) }).transcribe({
      audioFile: samplePath(conversation),
      workDir,
      options,
    });
    expect(wordErrorRate(whole.transcript, chunked.transcript)).toBeLessThan(0.2);
    const starts = chunked.words.map((word) => word.startTime);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    expect(chunked.words.at(-1)?.endTime).toBeLessThanOrEqual(chunked.audio_duration_ms);
    expect(Math.abs((chunked.words[0]?.startTime ?? 0) - (whole.words[0]?.startTime ?? 0))).toBeLessThan(300);
  });

  it('takes any diarizer: its record of each chunk is gathered there, and all are clustered once', async () => {
    const conversation = findSample(
      (sample) => sample.kind === 'conversation' && (sample.duration_s ?? 0) > 15,
    );
    // A stand-in for, say, a neural speaker-embedding model: one speaker per chunk.
    const gathered: number[] = [];
    const clustered: unknown[][] = [];
    const diarizer: Diarizer = {
      async gather({ regions, offsetMs }) {
        gathered.push(offsetMs);
        return { offsetMs, regions };
      },
      cluster(records, { speakersExpected }) {
        clustered.push([...records]);
        expect(speakersExpected).toBe(3);
        return (records as { offsetMs: number; regions: SpeechRegion[] }[]).flatMap((record, speaker) =>
          record.regions.map((region) => ({
            startMs: region.startMs + record.offsetMs,
            endMs: region.endMs + record.offsetMs,
            speaker,
          })),
        );
      },
    };
    const result = await new LocalTranscriber(new SphinxRecognizer(), {
      cut: cutAround(10),
      diarizer,
    }).transcribe({
      audioFile: samplePath(conversation),
      workDir,
      options: parseJobOptions({ speaker_diarization: 'true', speakers_expected: '3' }),
    });
    expect(gathered.length).toBeGreaterThan(1);
    expect(clustered).toHaveLength(1);
    expect(clustered[0]).toHaveLength(gathered.length);
    const labels = new Set(result.words.map((word) => word.speaker));
    expect(labels.size).toBeGreaterThan(1);
  });

  it('fails a one-channel file sent with dual_channel=true as not_dual_channel', async () => {
    const failure = await failureOf(
      transcribe(samplesOfKind('utterance')[0] as Sample, { dual_channel: 'true' }),
    );
    expect(failure.code).toBe('not_dual_channel');
  });
});
