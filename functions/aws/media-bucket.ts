import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  NotFound,
  PutObjectCommand,
  PutObjectTaggingCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { MEDIA_PREFIXES } from '#commons/contract';
import type { MediaStore, StoredAudio } from '#core/ports';
import type { TranscriptResult } from '#core/result';

/** Audio, uploads and results in one S3 bucket, under the contract's prefixes. */
export class S3MediaStore implements MediaStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    /** Signs upload URLs: a client that adds no checksum of its own, which the client's file would not match. */
    private readonly presigner: S3Client = client,
  ) {}

  /**
   * Streams the body into the object. When the body fails (a client that stops mid-file), the upload
   * is aborted and the body's error is thrown: the pipeline carries it, where `pipe` would leave it
   * unhandled and the upload waiting for ever.
   */
  async putAudio(key: string, body: NodeJS.ReadableStream, contentType?: string): Promise<StoredAudio> {
    let bytes = 0;
    const hash = createHash('sha256');
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        bytes += chunk.length;
        hash.update(chunk);
        callback(null, chunk);
      },
    });
    const upload = new Upload({
      client: this.client,
      params: {
        Bucket: this.bucket,
        Key: key,
        Body: counter,
        ContentType: contentType || 'application/octet-stream',
      },
    });
    const uploaded = upload.done();
    // An upload that fails stops reading; ending the stream lets the pipeline below end too.
    uploaded.catch((error: unknown) => counter.destroy(error as Error));
    try {
      await pipeline(body, counter);
    } catch (error) {
      await upload.abort().catch(() => undefined);
      await uploaded.catch(() => undefined);
      throw error;
    }
    await uploaded;
    return { bytes, sha256: hash.digest('hex') };
  }

  async downloadToFile(key: string, path: string): Promise<void> {
    const { Body } = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    if (!(Body instanceof Readable)) throw new Error(`S3 object ${key} has no readable body.`);
    await pipeline(Body, createWriteStream(path));
  }

  async describe(key: string): Promise<{ bytes: number } | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { bytes: head.ContentLength ?? 0 };
    } catch (error) {
      if (error instanceof NotFound || (error as { name?: string }).name === 'NoSuchKey') return undefined;
      throw error;
    }
  }

  async getTags(key: string): Promise<Record<string, string>> {
    const { TagSet = [] } = await this.client.send(
      new GetObjectTaggingCommand({ Bucket: this.bucket, Key: key }),
    );
    return Object.fromEntries(TagSet.map((tag) => [tag.Key ?? '', tag.Value ?? '']));
  }

  async setTags(key: string, tags: Record<string, string>): Promise<void> {
    await this.client.send(
      new PutObjectTaggingCommand({
        Bucket: this.bucket,
        Key: key,
        Tagging: { TagSet: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) },
      }),
    );
  }

  async presignUpload(
    key: string,
    upload: { bytes: number; contentType: string; tags: Record<string, string>; expiresInSeconds: number },
  ): Promise<{ url: string; headers: Record<string, string> }> {
    const tagging = new URLSearchParams(upload.tags).toString();
    const url = await getSignedUrl(
      this.presigner,
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ContentLength: upload.bytes,
        ContentType: upload.contentType,
        Tagging: tagging,
      }),
      {
        expiresIn: upload.expiresInSeconds,
        // Content-Length is signed by default; these two are signed too, and stay headers the client sends.
        signableHeaders: new Set(['content-type']),
        unhoistableHeaders: new Set(['x-amz-tagging']),
      },
    );
    return {
      url,
      headers: {
        'content-length': String(upload.bytes),
        'content-type': upload.contentType,
        'x-amz-tagging': tagging,
      },
    };
  }

  async putFile(key: string, path: string): Promise<void> {
    await new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: createReadStream(path) },
    }).done();
  }

  async putJson(key: string, value: unknown): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: JSON.stringify(value),
        ContentType: 'application/json',
      }),
    );
  }

  async presignDownload(key: string, expiresInSeconds: number): Promise<string> {
    return getSignedUrl(this.presigner, new GetObjectCommand({ Bucket: this.bucket, Key: key }), {
      expiresIn: expiresInSeconds,
    });
  }

  /**
   * The origin (scheme, host, port) of the URLs this store presigns, for a page's content security
   * policy. The SDK's endpoint rules make it (virtual-hosted or path style, the partition's domain, a
   * local endpoint), so it is read off a presigned URL rather than written out a second time.
   */
  async presignedOrigin(): Promise<string> {
    return new URL(await this.presignDownload(`${MEDIA_PREFIXES.audio}origin`, 60)).origin;
  }

  async putResult(key: string, result: TranscriptResult): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: JSON.stringify(result),
        ContentType: 'application/json',
      }),
    );
  }

  async getResult(key: string): Promise<TranscriptResult> {
    return (await this.readJson(key)) as TranscriptResult;
  }

  async readJson(key: string): Promise<unknown> {
    const { Body } = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    if (!Body) throw new Error(`S3 object ${key} has no body.`);
    return JSON.parse(await Body.transformToString('utf8'));
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }
}
