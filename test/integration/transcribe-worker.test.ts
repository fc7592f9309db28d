import { readFileSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BedrockRuntimeClient, ConverseCommand } from '@aws-sdk/client-bedrock-runtime';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import {
  ConflictException,
  GetTranscriptionJobCommand,
  StartTranscriptionJobCommand,
  TranscribeClient,
} from '@aws-sdk/client-transcribe';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { handler as status } from '#api/status';
import { FIRST_TWO_CHANNELS_NOTE } from '#aws/amazon-transcribe';
import { createS3Client, createSqsClient } from '#aws/clients';
import { readServiceConfig } from '#aws/config';
import { awsServices } from '#aws/services';
import { ASYNC_CHECK_INTERVAL_SECONDS } from '#commons/contract';
import type { StatusRecord } from '#core/job';
import { encodeCheckMessage, encodeProcessMessage } from '#core/messages';
import type { LocalQueues } from '#local/provision';
import { probeMedia } from '#speech/media';
import { runProcess } from '#speech/process';
import { apiEvent, sqsEvent } from '#test/helpers/events';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { findSample, type Sample, samplePath } from '#test/helpers/samples';
import { submitForm, submitSample } from '#test/helpers/submissions';
import { handler as worker } from '#worker/handler';

const fixture = <T = Record<string, unknown>>(name: string): T =>
  JSON.parse(readFileSync(new URL(`../fixtures/transcribe/${name}.json`, import.meta.url), 'utf8'));

const PREFIX = 'TestStack-';
const MODEL_ID = 'anthropic.claude-3-haiku-20240307-v1:0';
const TENANT = 'tenant-transcribe';
const transcribe = mockClient(TranscribeClient);
const bedrock = mockClient(BedrockRuntimeClient);
const mono = findSample((sample) => sample.kind === 'utterance' && (sample.duration_s ?? 0) > 3);
let queues: LocalQueues;

beforeAll(async () => {
  queues = await useFreshResources();
  Object.assign(process.env, {
    ENGINE: 'transcribe',
    TRANSCRIBE_JOB_PREFIX: PREFIX,
    SUMMARIZER: 'bedrock',
    BEDROCK_MODEL_ID: MODEL_ID,
  });
});

beforeEach(() => {
  transcribe.reset();
  bedrock.reset();
  transcribe
    .on(StartTranscriptionJobCommand)
    .resolves({ TranscriptionJob: { TranscriptionJobStatus: 'IN_PROGRESS' } });
  bedrock.on(ConverseCommand).resolves(fixture('converse-response'));
});

const submitted = (sample: Sample, fields: Record<string, string>) => submitSample(sample, TENANT, fields);

function stateChange(jobId: string, jobStatus: 'COMPLETED' | 'FAILED', prefix = PREFIX): string {
  const event = fixture<{ detail: Record<string, string> }>('job-state-change-event');
  event.detail = { TranscriptionJobName: `${prefix}${jobId}`, TranscriptionJobStatus: jobStatus };
  return JSON.stringify(event);
}

/** What Transcribe does on completion: its output document lands in our bucket. */
async function transcribeWritesOutput(jobId: string, name: string, mediaFileUri?: string): Promise<void> {
  const config = readServiceConfig();
  await createS3Client(config).send(
    new PutObjectCommand({
      Bucket: config.mediaBucket,
      Key: `transcribe/${TENANT}/${jobId}.json`,
      Body: JSON.stringify(fixture(name)),
    }),
  );
  const completed = fixture<{ TranscriptionJob: Record<string, unknown> }>('get-transcription-job-completed');
  completed.TranscriptionJob.TranscriptionJobName = `${PREFIX}${jobId}`;
  if (mediaFileUri) completed.TranscriptionJob.Media = { MediaFileUri: mediaFileUri };
  transcribe.on(GetTranscriptionJobCommand).resolves(completed);
}

async function statusOf(jobId: string): Promise<StatusRecord> {
  const response = await status(
    apiEvent({ method: 'GET', path: '/v1-beta/transcript/status', tenantId: TENANT, query: { id: jobId } }),
  );
  return JSON.parse(response.body);
}

async function delayedMessages(): Promise<number> {
  const { Attributes } = await createSqsClient(readServiceConfig()).send(
    new GetQueueAttributesCommand({
      QueueUrl: queues.jobsQueueUrl,
      AttributeNames: ['ApproximateNumberOfMessagesDelayed'],
    }),
  );
  return Number(Attributes?.ApproximateNumberOfMessagesDelayed ?? 0);
}

describe('worker with the transcribe engine', () => {
  it('starts a Transcribe job for the stored audio, then completes the job from the completion event', async () => {
    const jobId = await submitted(mono, {
      speaker_diarization: 'true',
      tldr: 'true',
      short_hand_notes: 'true',
    });
    const config = readServiceConfig();
    const delayedBefore = await delayedMessages();

    expect((await worker(sqsEvent([encodeProcessMessage(jobId)]))).batchItemFailures).toEqual([]);
    const starts = transcribe.commandCalls(StartTranscriptionJobCommand);
    expect(starts).toHaveLength(1);
    expect(starts[0]?.args[0].input).toEqual({
      TranscriptionJobName: `${PREFIX}${jobId}`,
      LanguageCode: 'en-US',
      Media: { MediaFileUri: `s3://${config.mediaBucket}/audio/${TENANT}/${jobId}` },
      OutputBucketName: config.mediaBucket,
      OutputKey: `transcribe/${TENANT}/${jobId}.json`,
      Settings: { ShowSpeakerLabels: true, MaxSpeakerLabels: 30 },
    });
    const started = await awsServices().jobs.get(jobId);
    expect(started).toMatchObject({ status: 'processing', handedOffAt: expect.any(String) });
    expect(Math.abs((started?.audio_duration_ms ?? 0) - (mono.duration_s ?? 0) * 1000)).toBeLessThan(100);
    // A check is scheduled in case the completion event is lost.
    expect(await delayedMessages()).toBe(delayedBefore + 1);
    expect((await statusOf(jobId)).status).toBe('processing');

    await transcribeWritesOutput(jobId, 'speaker-labels');
    expect((await worker(sqsEvent([stateChange(jobId, 'COMPLETED')]))).batchItemFailures).toEqual([]);

    const record = await statusOf(jobId);
    expect(record.status).toBe('completed');
    const results = record.results?.results;
    expect(results?.engine).toBe('transcribe');
    expect(results?.transcript).toBe("I've been on hold for an hour. Sorry about that.");
    expect(results?.words.map((word) => word.speaker)).toEqual([
      'S1',
      'S1',
      'S1',
      'S1',
      'S1',
      'S1',
      'S1',
      'S2',
      'S2',
      'S2',
    ]);
    expect(results?.utterances).toHaveLength(2);
    expect(results?.audio_duration_ms).toBe(started?.audio_duration_ms);
    expect(results?.tldr).toBe('A caller waited an hour on hold and got an apology.');
    expect(results?.short_hand_notes).toBe('A caller waited an hour on hold and got an apology.');

    const converse = bedrock.commandCalls(ConverseCommand).map((call) => call.args[0].input);
    expect(converse).toHaveLength(2);
    for (const input of converse) {
      expect(input.modelId).toBe(MODEL_ID);
      expect(input.system?.[0]?.text).toMatch(/Do not invent/);
      expect(input.messages?.[0]?.content?.[0]?.text).toContain("I've been on hold for an hour.");
      expect(input.inferenceConfig?.temperature).toBe(0);
    }
    expect(converse.map((input) => input.messages?.[0]?.content?.[0]?.text)).toEqual([
      expect.stringMatching(/^Write a TL;DR/),
      expect.stringMatching(/^Write shorthand notes/),
    ]);
  });

  it('asks for channel identification for a dual-channel job and maps the channels', async () => {
    const stereo = findSample((sample) => sample.kind === 'stereo');
    const jobId = await submitted(stereo, { dual_channel: 'true', speaker_diarization: 'true' });
    await worker(sqsEvent([encodeProcessMessage(jobId)]));
    expect(transcribe.commandCalls(StartTranscriptionJobCommand)[0]?.args[0].input.Settings).toEqual({
      ChannelIdentification: true,
    });
    await transcribeWritesOutput(jobId, 'channel-identification');
    await worker(sqsEvent([stateChange(jobId, 'COMPLETED')]));
    const results = (await statusOf(jobId)).results?.results;
    expect(results?.words.map((word) => word.channel)).toEqual([1, 1, 1, 1, 1, 1, 1, 2, 2, 2]);
    expect(results).not.toHaveProperty('tldr');
    expect(bedrock.commandCalls(ConverseCommand)).toHaveLength(0);
  });

  it('passes speakers_expected as the speaker limit, at least the 2 Transcribe accepts', async () => {
    for (const [expected, limit] of [
      ['3', 3],
      ['1', 2],
    ] as const) {
      transcribe.resetHistory();
      const jobId = await submitted(mono, { speaker_diarization: 'true', speakers_expected: expected });
      await worker(sqsEvent([encodeProcessMessage(jobId)]));
      expect(transcribe.commandCalls(StartTranscriptionJobCommand)[0]?.args[0].input.Settings).toEqual({
        ShowSpeakerLabels: true,
        MaxSpeakerLabels: limit,
      });
    }
  });

  it('hands Transcribe the first two channels of a dual-channel file with more, and says so in the notes', async () => {
    const stereo = findSample((sample) => sample.kind === 'stereo');
    const workDir = await mkdtemp(join(tmpdir(), 'three-channels-'));
    const threeChannels = join(workDir, 'three.wav');
    const made = await runProcess(
      'ffmpeg',
      [
        '-v',
        'error',
        '-i',
        samplePath(stereo),
        '-filter_complex',
        '[0:a:0]pan=3c|c0=c0|c1=c1|c2=c0[out]',
        '-map',
        '[out]',
        threeChannels,
      ],
      60_000,
    );
    expect(made.code).toBe(0);
    const form = new FormData();
    form.append('audio', new Blob([await readFile(threeChannels)]), 'three.wav');
    form.append('dual_channel', 'true');
    const { body } = await submitForm(form, TENANT);
    const jobId = body.id ?? '';

    expect((await worker(sqsEvent([encodeProcessMessage(jobId)]))).batchItemFailures).toEqual([]);
    const config = readServiceConfig();
    const inputKey = `transcribe/${TENANT}/${jobId}.two-channels.flac`;
    const [start] = transcribe.commandCalls(StartTranscriptionJobCommand);
    expect(start?.args[0].input).toMatchObject({
      Media: { MediaFileUri: `s3://${config.mediaBucket}/${inputKey}` },
      Settings: { ChannelIdentification: true },
    });
    // What Transcribe reads has exactly two channels.
    const copy = join(workDir, 'copy.flac');
    await awsServices().media.downloadToFile(inputKey, copy);
    expect((await probeMedia(copy)).channels).toBe(2);

    await transcribeWritesOutput(jobId, 'channel-identification', `s3://${config.mediaBucket}/${inputKey}`);
    await worker(sqsEvent([stateChange(jobId, 'COMPLETED')]));
    const results = (await statusOf(jobId)).results?.results;
    expect(results?.notes).toEqual([FIRST_TWO_CHANNELS_NOTE]);
    expect(results?.words.map((word) => word.channel)).toEqual([1, 1, 1, 1, 1, 1, 1, 2, 2, 2]);
  });

  it("ends the job in error with Transcribe's reason when the Transcribe job failed", async () => {
    const jobId = await submitted(mono, {});
    await worker(sqsEvent([encodeProcessMessage(jobId)]));
    transcribe.on(GetTranscriptionJobCommand).resolves(fixture('get-transcription-job-failed'));
    expect((await worker(sqsEvent([stateChange(jobId, 'FAILED')]))).batchItemFailures).toEqual([]);
    const record = await statusOf(jobId);
    expect(record.status).toBe('error');
    expect(record.error?.code).toBe('unsupported_media');
    expect(record.error?.message).toMatch(/^Amazon Transcribe: The media format that you specified/);
  });

  it('finishes a job whose completion event was lost, through the scheduled checks', async () => {
    const jobId = await submitted(mono, {});
    await worker(sqsEvent([encodeProcessMessage(jobId)]));
    transcribe
      .on(GetTranscriptionJobCommand)
      .resolves({ TranscriptionJob: { TranscriptionJobStatus: 'IN_PROGRESS' } });
    const delayedBefore = await delayedMessages();
    expect((await worker(sqsEvent([encodeCheckMessage(jobId, 1)]))).batchItemFailures).toEqual([]);
    expect((await statusOf(jobId)).status).toBe('processing');
    expect(await delayedMessages()).toBe(delayedBefore + 1);
    expect(ASYNC_CHECK_INTERVAL_SECONDS).toBeLessThanOrEqual(900);

    await transcribeWritesOutput(jobId, 'mono');
    await worker(sqsEvent([encodeCheckMessage(jobId, 2)]));
    expect((await statusOf(jobId)).status).toBe('completed');
  });

  it('refuses a one-channel file for dual_channel before paying for Transcribe', async () => {
    const jobId = await submitted(mono, { dual_channel: 'true' });
    await worker(sqsEvent([encodeProcessMessage(jobId)]));
    expect((await statusOf(jobId)).error?.code).toBe('not_dual_channel');
    expect(transcribe.commandCalls(StartTranscriptionJobCommand)).toHaveLength(0);
  });

  it('starts Transcribe once: a repeated start message leaves the job to its events', async () => {
    const jobId = await submitted(mono, {});
    await worker(sqsEvent([encodeProcessMessage(jobId)]));
    await worker(sqsEvent([encodeProcessMessage(jobId)], 2));
    expect(transcribe.commandCalls(StartTranscriptionJobCommand)).toHaveLength(1);
    expect((await statusOf(jobId)).status).toBe('processing');
  });

  it('treats a Transcribe job that already exists as started (the worker died after starting it)', async () => {
    const jobId = await submitted(mono, {});
    transcribe
      .on(StartTranscriptionJobCommand)
      .rejects(new ConflictException({ message: 'The requested job name already exists.', $metadata: {} }));
    expect((await worker(sqsEvent([encodeProcessMessage(jobId)]))).batchItemFailures).toEqual([]);
    expect(await awsServices().jobs.get(jobId)).toMatchObject({
      status: 'processing',
      handedOffAt: expect.any(String),
    });
  });

  it("ignores the events of another deployment's Transcribe jobs", async () => {
    const response = await worker(sqsEvent([stateChange('some-job', 'COMPLETED', 'OtherStack-')]));
    expect(response.batchItemFailures).toEqual([]);
    expect(transcribe.commandCalls(GetTranscriptionJobCommand)).toHaveLength(0);
  });
});
