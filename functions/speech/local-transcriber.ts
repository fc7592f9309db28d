import { rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import pLimit, { type LimitFunction } from 'p-limit';
import { z } from 'zod';
import { DEFAULT_CHUNK_SECONDS } from '#commons/contract';
import type { JobOptions } from '#core/options';
import type { ChunkedTranscriber, ChunkPlan, CutChunk, Transcription } from '#core/ports';
import { assembleTranscript, type TimedWord } from '#core/result';
import { type ChunkBounds, ChunkCutter, type CutSettings, ownsWord, planPieces } from './chunks.ts';
import { BicDiarizer, type Diarizer, speakerAt } from './diarization.ts';
import { checkDecodedLength, decodePcm, dualChannelSelection, PCM_SAMPLE_RATE, probeMedia } from './media.ts';
import { formatWords } from './punctuation.ts';
import type { Recognizer } from './recognizer.ts';
import { detectSpeech, keepWordsInSpeech, type SpeechRegion } from './vad.ts';
import { detectVoicing, keepVoicedWords, keepVoicedWordsIn } from './voicing.ts';
import { wavDurationMs, writeWav, writeWavSlice } from './wav.ts';

/**
 * Where long audio is cut into chunks that workers transcribe apart: between half and twice `seconds`,
 * at the quietest stretch, with a quarter second of the neighbours' audio each side to hear a word at a
 * cut whole.
 */
export function cutAround(seconds: number): CutSettings {
  const targetMs = seconds * 1000;
  return { minMs: targetMs / 2, targetMs, maxMs: 2 * targetMs, edgeMs: 250 };
}

export const DEFAULT_CUT = cutAround(DEFAULT_CHUNK_SECONDS);

export interface LocalTranscriberSettings {
  /** Recognizer processes at once in one worker, over the channels and pieces of a chunk. */
  parallelism?: number;
  /** Where chunks are cut (tests and the benchmark tune it). */
  cut?: CutSettings;
  /** Who spoke when (default: the classical `BicDiarizer`). */
  diarizer?: Diarizer;
}

/** The job's channels as transcribed: 1, or 2 for a dual-channel job. */
const channelCount = z.number().int().min(1).max(2);

/** A chunk's details: where it lies in the file, and how many channels it has. */
const chunkDetails = z.object({
  bounds: z.object({
    startMs: z.number(),
    endMs: z.number(),
    ownStartMs: z.number(),
    ownEndMs: z.number(),
  }),
  channels: channelCount,
});
type ChunkDetails = z.infer<typeof chunkDetails>;

/** The plan's details: what the audio was. */
const planDetails = z.object({ channels: channelCount, notes: z.array(z.string()) });
type PlanDetails = z.infer<typeof planDetails>;

/**
 * What a chunk worker hands on, per channel: the words the chunk owns (file time) and, to tell speakers
 * apart, the diarizer's record of its voices.
 */
interface ChunkResult {
  channels: { words: TimedWord[]; voices?: unknown }[];
}

/**
 * A chunk's result as read back from the store: checked, since another worker (or version) wrote it.
 * The voices are left to the diarizer, which checks its own records.
 */
const chunkResult = z.object({
  channels: z.array(
    z.object({
      words: z.array(
        z.object({
          text: z.string(),
          startMs: z.number(),
          endMs: z.number(),
          confidence: z.number(),
          channel: z.number().int().optional(),
        }),
      ),
      voices: z.unknown().optional(),
    }),
  ),
});

/**
 * The offline transcriber around a recognizer, in three steps that may run in different workers.
 * `plan`: probe, then decode as a stream (per channel for dual-channel jobs) and cut it at silences into
 * chunks of 30–120 s. `transcribeChunk`: find speech (voice activity: a chunk without any is not
 * recognised at all, since recognisers invent words in noise, tones and music), recognise it in pieces (as long as
 * the recognizer takes) in parallel, drop words outside speech or without voiced audio, and gather the statistics
 * of its voices. `assemble`: keep each word once (the chunk that owns its middle), punctuate, cluster the
 * voices of all chunks once, and build the result.
 */
export class LocalTranscriber implements ChunkedTranscriber {
  readonly mode = 'chunked';
  private readonly limit: LimitFunction;
  private readonly cut: CutSettings;
  private readonly diarizer: Diarizer;

  constructor(
    private readonly recognizer: Recognizer,
    settings: LocalTranscriberSettings = {},
  ) {
    this.limit = pLimit(settings.parallelism ?? availableParallelism());
    this.cut = settings.cut ?? DEFAULT_CUT;
    this.diarizer = settings.diarizer ?? new BicDiarizer();
  }

  async plan(input: {
    audio: string;
    options: JobOptions;
    workDir: string;
    storeChunk(chunk: CutChunk): Promise<void>;
  }): Promise<ChunkPlan> {
    const media = await probeMedia(input.audio);
    const selection = input.options.dual_channel ? dualChannelSelection(media) : undefined;
    const decoded = decodePcm(input.audio, selection?.channels);
    let chunks = 0;
    const cutter = new ChunkCutter(
      decoded.channels,
      PCM_SAMPLE_RATE,
      this.cut,
      async (index, bounds, audio, last) => {
        chunks += 1;
        const files = await Promise.all(
          audio.map(async (samples, channel) => {
            const file = join(input.workDir, `chunk-${index}-${channel}.wav`);
            await writeWav(file, samples, PCM_SAMPLE_RATE);
            return file;
          }),
        );
        const details: ChunkDetails = { bounds, channels: decoded.channels };
        await input.storeChunk({ index, files, last, details });
      },
    );
    let durationMs: number;
    try {
      for await (const data of decoded.pcm) await cutter.push(data as Buffer);
      await decoded.done;
      durationMs = await cutter.end();
    } catch (error) {
      decoded.stop();
      throw error;
    }
    checkDecodedLength(durationMs);
    const details: PlanDetails = { channels: decoded.channels, notes: selection?.notes ?? [] };
    return { chunks, audio_duration_ms: durationMs, details };
  }

  async transcribeChunk(input: {
    index: number;
    details: unknown;
    files: string[];
    options: JobOptions;
    workDir: string;
  }): Promise<ChunkResult> {
    const details = chunkDetails.parse(input.details);
    const { bounds } = details;
    const channels = await Promise.all(
      input.files.map(async (wavFile, channelIndex) => {
        const regions = await detectSpeech(wavFile);
        if (regions.length === 0) return { words: [] };
        const chunkMs = await wavDurationMs(wavFile);
        const { speaker_diarization: diarize } = input.options;
        // Diarization needs the whole voicing track; the speech gate alone looks around the words only.
        const [heard, voicing] = await Promise.all([
          this.recognizePieces(
            wavFile,
            planPieces(regions, chunkMs, this.recognizer.maxPieceMs),
            input.workDir,
          ),
          diarize ? detectVoicing(wavFile) : undefined,
        ]);
        const inSpeech = keepWordsInSpeech(heard, regions);
        const voiced = voicing
          ? keepVoicedWords(inSpeech, voicing)
          : await keepVoicedWordsIn(wavFile, inSpeech);
        const channel = details.channels > 1 ? channelIndex + 1 : undefined;
        const words = voiced
          .map((word) => ({
            ...word,
            startMs: word.startMs + bounds.startMs,
            endMs: word.endMs + bounds.startMs,
            ...(channel !== undefined ? { channel } : {}),
          }))
          .filter((word) => ownsWord(bounds, word));
        if (!voicing) return { words };
        // Only the speech of the part this chunk owns: the edges belong to its neighbours.
        const owned = ownRegions(regions, bounds);
        const voices = await this.diarizer.gather({
          wavFile,
          regions: owned,
          voicing,
          offsetMs: bounds.startMs,
        });
        return { words, voices };
      }),
    );
    return { channels };
  }

  async assemble(input: {
    plan: ChunkPlan;
    results: unknown[];
    options: JobOptions;
  }): Promise<Transcription> {
    const { options } = input;
    const details = planDetails.parse(input.plan.details);
    const results: ChunkResult[] = input.results.map((result) => chunkResult.parse(result));
    const words: TimedWord[] = [];
    for (let channel = 0; channel < details.channels; channel++) {
      const heard = results
        .flatMap((result) => result.channels[channel]?.words ?? [])
        .sort((a, b) => a.startMs - b.startMs);
      const punctuated = formatWords(heard, options.punctuate, this.recognizer.punctuates);
      const voices = results.map((result) => result.channels[channel]?.voices).filter((v) => v !== undefined);
      const segments =
        options.speaker_diarization && voices.length > 0
          ? this.diarizer.cluster(voices, { speakersExpected: options.speakers_expected })
          : undefined;
      const number = details.channels > 1 ? channel + 1 : undefined;
      for (const word of punctuated) {
        const voice = segments && speakerAt(segments, word.startMs, word.endMs);
        // Voices are told apart within a channel: the same number on two channels is two speakers.
        words.push({ ...word, ...(voice !== undefined ? { speakerLabel: `${number ?? 0}:${voice}` } : {}) });
      }
    }
    return {
      ...assembleTranscript(words),
      audio_duration_ms: input.plan.audio_duration_ms,
      engine: this.recognizer.name,
      ...(details.notes.length ? { notes: details.notes } : {}),
    };
  }

  /**
   * All three steps in this process, chunks one after another: what one worker does with a file of one
   * chunk, and what the evaluation and the benchmark run to compare with the fanned-out service.
   */
  async transcribe(input: {
    audioFile: string;
    workDir: string;
    options: JobOptions;
  }): Promise<Transcription> {
    const stored: CutChunk[] = [];
    const plan = await this.plan({
      audio: input.audioFile,
      options: input.options,
      workDir: input.workDir,
      storeChunk: async (chunk) => {
        stored.push(chunk);
      },
    });
    const results: ChunkResult[] = [];
    for (const { index, files, details } of stored) {
      const { options, workDir } = input;
      results.push(await this.transcribeChunk({ index, details, files, options, workDir }));
      await Promise.all(files.map((file) => rm(file, { force: true })));
    }
    return this.assemble({ plan, results, options: input.options });
  }

  /** Decodes each piece in its own process, as many at once as the limit allows, and shifts the times back. */
  private async recognizePieces(
    wavFile: string,
    pieces: { startMs: number; endMs: number }[],
    workDir: string,
  ): Promise<TimedWord[]> {
    const parts = await Promise.all(
      pieces.map((piece, index) =>
        this.limit(async () => {
          const file = join(workDir, `${wavFile.split('/').at(-1)}-piece-${index}.wav`);
          await writeWavSlice(wavFile, piece.startMs, piece.endMs, file);
          try {
            const words = await this.recognizer.recognize(file);
            return words.map((word) => ({
              ...word,
              startMs: word.startMs + piece.startMs,
              endMs: word.endMs + piece.startMs,
            }));
          } finally {
            await rm(file, { force: true });
          }
        }),
      ),
    );
    return parts.flat();
  }
}

/** The speech regions of a chunk (chunk time) clipped to the part of the file it owns. */
function ownRegions(regions: SpeechRegion[], bounds: ChunkBounds): SpeechRegion[] {
  const from = bounds.ownStartMs - bounds.startMs;
  const to = bounds.ownEndMs - bounds.startMs;
  return regions
    .map((region) => ({ startMs: Math.max(region.startMs, from), endMs: Math.min(region.endMs, to) }))
    .filter((region) => region.endMs > region.startMs);
}
