import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import { parseMultipartForm } from '#api/multipart';
import { multipartBody } from '#test/helpers/events';

async function parse(form: FormData | { body: Buffer; contentType: string }) {
  const { body, contentType } = form instanceof FormData ? await multipartBody(form) : form;
  const received: { name: string; content: string }[] = [];
  const parsed = await parseMultipartForm({
    body: Readable.from([body]),
    contentType,
    receiveFile: async (stream, info) => {
      const content = await text(stream);
      received.push({ name: info.fileName, content });
      return { bytes: Buffer.byteLength(content) };
    },
  });
  return { ...parsed, received };
}

describe('parseMultipartForm', () => {
  it('streams the audio part and collects the text parts', async () => {
    const form = new FormData();
    form.append('punctuate', 'false');
    form.append('audio', new Blob(['RIFF-audio-bytes']), 'a.wav');
    form.append('custom', 'after the file');
    const parsed = await parse(form);
    expect(parsed.fields).toEqual({ punctuate: 'false', custom: 'after the file' });
    expect(parsed.file).toEqual({ bytes: 16 });
    expect(parsed.received).toEqual([{ name: 'a.wav', content: 'RIFF-audio-bytes' }]);
    expect(parsed.problem).toBeUndefined();
  });

  it('accepts "file" as an alias of "audio"', async () => {
    const form = new FormData();
    form.append('file', new Blob(['abc']), 'a.mp3');
    expect((await parse(form)).file).toEqual({ bytes: 3 });
  });

  it('reports a second audio file, a stray file part, a text audio part and a repeated field', async () => {
    const twoFiles = new FormData();
    twoFiles.append('audio', new Blob(['a']), 'a.wav');
    twoFiles.append('file', new Blob(['b']), 'b.wav');
    expect((await parse(twoFiles)).problem).toMatchObject({ code: 'invalid_request' });

    const stray = new FormData();
    stray.append('picture', new Blob(['a']), 'a.png');
    expect((await parse(stray)).problem).toMatchObject({ code: 'invalid_request', field: 'picture' });

    const textAudio = new FormData();
    textAudio.append('audio', 'not a file');
    expect((await parse(textAudio)).problem).toMatchObject({ code: 'missing_audio', field: 'audio' });

    const repeated = new FormData();
    repeated.append('custom', 'a');
    repeated.append('custom', 'b');
    expect((await parse(repeated)).problem).toMatchObject({ code: 'invalid_request', field: 'custom' });
  });

  it('reports a body cut off in the middle of the file as malformed', async () => {
    const form = new FormData();
    form.append('audio', new Blob(['x'.repeat(10_000)]), 'a.wav');
    const { body, contentType } = await multipartBody(form);
    const parsed = await parse({ body: body.subarray(0, 5_000), contentType });
    expect(parsed.problem).toMatchObject({ code: 'invalid_request' });
  });

  it('refuses a multipart content type without a boundary', async () => {
    await expect(parse({ body: Buffer.from('x'), contentType: 'multipart/form-data' })).rejects.toMatchObject(
      { code: 'invalid_request' },
    );
  });
});
