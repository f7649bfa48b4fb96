// A Server-Sent Events parser over a fetch body (the WHATWG event-stream format): fetch can send
// the credential in a header, which the browser's EventSource cannot.

export interface SseMessage {
  /** The `id` field of the block, when it had one. */
  id: string | undefined;
  event: string | undefined;
  /** The data lines joined by "\n"; an empty string for a block without data (an id alone). */
  data: string;
  hasData: boolean;
}

/** Every block of the stream that carried a field (comment-only blocks are skipped). */
export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let message = blankMessage();
  let fields = 0;
  let data: string[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (let newline = buffer.search(/\r\n|\r|\n/); newline >= 0; newline = buffer.search(/\r\n|\r|\n/)) {
        // A lone "\r" at the end may be the first half of "\r\n": wait for the next chunk.
        if (buffer[newline] === '\r' && newline === buffer.length - 1 && !done) break;
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (fields > 0) yield { ...message, data: data.join('\n'), hasData: data.length > 0 };
          message = blankMessage();
          fields = 0;
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const fieldValue = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') data.push(fieldValue);
        else if (field === 'id' && !fieldValue.includes('\0')) message.id = fieldValue;
        else if (field === 'event') message.event = fieldValue;
        else continue;
        fields++;
      }
      if (done) return;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

function blankMessage(): SseMessage {
  return { id: undefined, event: undefined, data: '', hasData: false };
}
