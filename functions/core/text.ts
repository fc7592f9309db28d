/** Plain-text helpers shared by the summarizers. */

/** Splits text into sentences after ., ! or ? followed by a space; text without marks is one sentence. */
export function splitSentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+/)
    .map((sentence) => sentence.trim())
    .filter(Boolean);
}

/** Cuts text into pieces of at most `maxChars`, at sentence ends where possible. */
export function chunkText(text: string, maxChars: number): string[] {
  const chunks: string[] = [];
  let current = '';
  for (const sentence of splitSentences(text)) {
    for (let offset = 0; offset < sentence.length; offset += maxChars) {
      const piece = sentence.slice(offset, offset + maxChars);
      if (current && current.length + 1 + piece.length > maxChars) {
        chunks.push(current);
        current = '';
      }
      current = current ? `${current} ${piece}` : piece;
    }
  }
  if (current) chunks.push(current);
  return chunks;
}

export function countWords(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}
