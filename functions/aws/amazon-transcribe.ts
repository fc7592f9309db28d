import { createReadStream } from 'node:fs';
import {
  BadRequestException,
  ConflictException,
  GetTranscriptionJobCommand,
  StartTranscriptionJobCommand,
  type TranscribeClient,
} from '@aws-sdk/client-transcribe';
import { transcribeInputKey, transcribeJobName, transcribeOutputKey } from '#commons/contract';
import { type JobError, JobFailure } from '#core/errors';
import type { Job } from '#core/job';
import type { AsyncTranscriber, AsyncTranscriptionState, MediaStore } from '#core/ports';
import { dualChannelSelection, extractChannels, probeMedia } from '#speech/media';
import { mapTranscribeOutput } from './transcribe-output.ts';

/** Said in the result of a dual-channel job whose audio had more channels than Transcribe takes. */
export const FIRST_TWO_CHANNELS_NOTE =
  'The audio has more than two channels; only the first two were transcribed.';

/**
 * Transcribe tells speakers apart up to this number (2 to 30, API Reference, `Settings`); the real count
 * is found automatically. The client's `speakers_expected` becomes the limit.
 */
const MAX_SPEAKER_LABELS = 30;
const MIN_SPEAKER_LABELS = 2;

export interface AmazonTranscribeSettings {
  bucket: string;
  /** Prefix of this deployment's job names (the EventBridge rule matches it). */
  transcribeJobPrefix: string;
}

/**
 * Amazon Transcribe batch jobs. The worker probes the audio it already fetched (so that bad input is
 * refused with a precise code before Transcribe is paid), starts a job that reads the audio from the
 * bucket and writes its output there, and maps that output once the job is done.
 */
export class AmazonTranscribe implements AsyncTranscriber {
  readonly mode = 'async';

  constructor(
    private readonly client: TranscribeClient,
    private readonly media: MediaStore,
    private readonly settings: AmazonTranscribeSettings,
  ) {}

  async start(input: {
    job: Job;
    audioFile: string;
    workDir: string;
  }): Promise<{ audio_duration_ms: number }> {
    const { job } = input;
    const info = await probeMedia(input.audioFile);
    let mediaKey = job.audioKey;
    if (job.options.dual_channel) {
      const { channels } = dualChannelSelection(info);
      // Channel identification takes two channels: hand Transcribe the first two, as the local engine uses.
      if (info.channels > channels.length) {
        mediaKey = transcribeInputKey(job.tenantId, job.id);
        const file = await extractChannels(input.audioFile, input.workDir, channels);
        await this.media.putAudio(mediaKey, createReadStream(file), 'audio/flac');
      }
    }
    try {
      await this.client.send(
        new StartTranscriptionJobCommand({
          TranscriptionJobName: transcribeJobName(this.settings.transcribeJobPrefix, job.id),
          LanguageCode: 'en-US',
          Media: { MediaFileUri: `s3://${this.settings.bucket}/${mediaKey}` },
          OutputBucketName: this.settings.bucket,
          OutputKey: transcribeOutputKey(job.tenantId, job.id),
          // Transcribe refuses speaker labels together with channel identification: a channel is a speaker.
          ...(job.options.dual_channel
            ? { Settings: { ChannelIdentification: true } }
            : job.options.speaker_diarization
              ? {
                  Settings: {
                    ShowSpeakerLabels: true,
                    MaxSpeakerLabels: Math.max(
                      MIN_SPEAKER_LABELS,
                      job.options.speakers_expected ?? MAX_SPEAKER_LABELS,
                    ),
                  },
                }
              : {}),
        }),
      );
    } catch (error) {
      // Transcribe refused this input; asking again would not change its mind.
      if (error instanceof BadRequestException) {
        const failure = transcribeFailure(error.message);
        throw new JobFailure(failure.code, failure.message);
      }
      // A job that exists already was started by an earlier delivery of the same message.
      if (!(error instanceof ConflictException)) throw error;
    }
    return { audio_duration_ms: info.durationMs ?? 0 };
  }

  async poll(job: Job): Promise<AsyncTranscriptionState> {
    const { TranscriptionJob } = await this.client.send(
      new GetTranscriptionJobCommand({
        TranscriptionJobName: transcribeJobName(this.settings.transcribeJobPrefix, job.id),
      }),
    );
    switch (TranscriptionJob?.TranscriptionJobStatus) {
      case 'COMPLETED': {
        const document = await this.media.readJson(transcribeOutputKey(job.tenantId, job.id));
        const mapped = mapTranscribeOutput(document, job.options);
        const lastEnd = mapped.words.at(-1)?.endTime ?? 0;
        const reduced = TranscriptionJob.Media?.MediaFileUri?.endsWith(
          transcribeInputKey(job.tenantId, job.id),
        );
        return {
          state: 'completed',
          transcription: {
            ...mapped,
            ...(reduced ? { notes: [FIRST_TWO_CHANNELS_NOTE] } : {}),
            audio_duration_ms: job.audio_duration_ms || lastEnd,
            engine: 'transcribe',
          },
        };
      }
      case 'FAILED':
        return {
          state: 'failed',
          error: transcribeFailure(TranscriptionJob.FailureReason ?? 'no reason given'),
        };
      default:
        return { state: 'running' };
    }
  }
}

/** Our job error for a reason Transcribe gave, keeping its words in the message. */
export function transcribeFailure(reason: string): JobError {
  const message = `Amazon Transcribe: ${reason}`;
  if (/channel/i.test(reason)) return { code: 'not_dual_channel', message };
  if (/too long|duration|exceeds/i.test(reason)) return { code: 'audio_too_long', message };
  if (
    /media format|codec|unsupported|corrupt|invalid (file|media|audio)|could not (read|decode)/i.test(reason)
  ) {
    return { code: 'unsupported_media', message };
  }
  return { code: 'transcription_failed', message };
}
