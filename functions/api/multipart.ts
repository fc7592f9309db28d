import type { Readable } from 'node:stream';
import { Busboy, type BusboyFileStream } from '@fastify/busboy';
import { MAX_DIRECT_UPLOAD_BYTES } from '#commons/contract';
import { RequestError } from '#core/errors';

/** Form parts that carry the audio file; `file` is an alias some clients use (DESIGN 3). */
const AUDIO_PARTS = ['audio', 'file'] as const;

const MAX_FIELD_BYTES = 64 * 1024;
const MAX_FIELD_NAME_BYTES = 100;
const MAX_PARTS = 32;
/** Header lines of one part: Content-Disposition and Content-Type are all a form needs. */
const MAX_PART_HEADERS = 20;
/** A media type as `type/subtype`, the only shape passed on to storage. */
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$/i;

export interface ReceivedFile {
  bytes: number;
  /** SHA-256 of the bytes (hex), when the receiver computed it. */
  sha256?: string;
}

export interface FileInfo {
  fileName: string;
  /** The part's media type when it is a well-formed one, else `application/octet-stream`. */
  mimeType: string;
}

export interface ParsedForm {
  /** The text parts; a null-prototype record, so that a part named `__proto__` is just an unknown field. */
  fields: Record<string, string>;
  file?: ReceivedFile;
  /** The first thing wrong with the form; the file, if any, was still received and must be discarded. */
  problem?: RequestError;
}

const isAudioPart = (name: string) => (AUDIO_PARTS as readonly string[]).includes(name);

/**
 * Parses a multipart/form-data body with busboy, streaming the audio part to `receiveFile` as it
 * arrives. Resolves only when the body is read and the file has been received; a body that is cut
 * off or malformed anywhere resolves with a `problem`, never an unhandled stream error.
 */
export function parseMultipartForm(input: {
  body: Readable;
  contentType: string;
  receiveFile: (stream: BusboyFileStream, info: FileInfo) => Promise<ReceivedFile>;
}): Promise<ParsedForm> {
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = Object.create(null);
    let problem: RequestError | undefined;
    let receiving: Promise<ReceivedFile> | undefined;
    let audioStream: BusboyFileStream | undefined;
    let settled = false;
    const report = (error: RequestError) => {
      problem ??= error;
    };
    const settle = async () => {
      if (settled) return;
      settled = true;
      try {
        const file = receiving ? await receiving : undefined;
        resolve({ fields, ...(file ? { file } : {}), ...(problem ? { problem } : {}) });
      } catch (error) {
        // A malformed body also breaks the file stream; answer the form problem, not the upload error.
        if (problem) resolve({ fields, problem });
        else reject(error);
      }
    };

    let busboy: ReturnType<typeof Busboy>;
    try {
      busboy = Busboy({
        headers: { 'content-type': input.contentType },
        limits: {
          fieldSize: MAX_FIELD_BYTES,
          fieldNameSize: MAX_FIELD_NAME_BYTES,
          parts: MAX_PARTS,
          fileSize: MAX_DIRECT_UPLOAD_BYTES,
          headerPairs: MAX_PART_HEADERS,
        },
      });
    } catch {
      reject(new RequestError('invalid_request', 'The multipart/form-data content type has no boundary.'));
      return;
    }

    busboy.on('file', (name, stream, fileName, _encoding, mimeType) => {
      if (!isAudioPart(name)) {
        report(
          new RequestError(
            'invalid_request',
            `Unexpected file part "${name}"; send the audio as "audio".`,
            name,
          ),
        );
        stream.resume();
      } else if (receiving) {
        report(new RequestError('invalid_request', 'Send exactly one audio file per request.', name));
        stream.resume();
      } else {
        audioStream = stream;
        stream.on('limit', () =>
          report(
            new RequestError(
              'payload_too_large',
              `The audio part is larger than ${MAX_DIRECT_UPLOAD_BYTES} bytes.`,
              name,
            ),
          ),
        );
        receiving = input.receiveFile(stream, {
          fileName,
          mimeType: MEDIA_TYPE.test(mimeType) ? mimeType : 'application/octet-stream',
        });
        receiving.catch(() => undefined); // awaited in settle()
      }
    });
    busboy.on('field', (name, value, nameTruncated, valueTruncated) => {
      if (nameTruncated) {
        report(
          new RequestError('invalid_request', `A part name is longer than ${MAX_FIELD_NAME_BYTES} bytes.`),
        );
      } else if (isAudioPart(name)) {
        report(
          new RequestError('missing_audio', `The "${name}" part must be a file, not a text value.`, name),
        );
      } else if (valueTruncated) {
        report(new RequestError('invalid_option', `The "${name}" part is too long.`, name));
      } else if (Object.hasOwn(fields, name)) {
        report(new RequestError('invalid_request', `The "${name}" part is sent more than once.`, name));
      } else {
        fields[name] = value;
      }
    });
    busboy.on('partsLimit', () =>
      report(new RequestError('invalid_request', `The form has more than ${MAX_PARTS} parts.`)),
    );
    busboy.on('finish', settle);
    busboy.on('error', () => {
      report(new RequestError('invalid_request', 'The multipart/form-data body is malformed or cut off.'));
      // Stop the upload of a file whose end will never come.
      audioStream?.destroy(new Error('Malformed multipart body.'));
      settle();
    });
    input.body.on('error', () => busboy.destroy(new Error('The request body failed.')));
    input.body.pipe(busboy);
  });
}
