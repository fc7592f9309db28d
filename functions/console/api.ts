/**
 * The console's requests to the API beside the page (the stage prefix, if any, comes from the page's
 * address), with the key kept in sessionStorage and sent in request URLs, never in the page's own.
 */

const KEY_STORAGE = 'transcription-console.api-key';

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

export function apiKey(): string | null {
  return sessionStorage.getItem(KEY_STORAGE);
}

export function rememberKey(key: string): void {
  sessionStorage.setItem(KEY_STORAGE, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(KEY_STORAGE);
}

/** An API address with the key in its query string, where API Gateway's authorizer cache looks for it. */
export function apiUrl(path: string, parameters: Record<string, string> = {}): URL {
  const url = new URL(path, document.baseURI);
  for (const [name, value] of Object.entries(parameters)) if (value) url.searchParams.set(name, value);
  url.searchParams.set('x-api-key', apiKey() ?? '');
  return url;
}

/** The API's `{error: {code, message, field}}`, or what the status says when the body is not that. */
export function failureOf(status: number, statusText: string, body: string): ApiFailure {
  let error: { code?: string; message?: string; field?: string } | undefined;
  try {
    error = (JSON.parse(body) as { error?: typeof error })?.error;
  } catch {
    error = undefined;
  }
  return new ApiFailure(
    status,
    error?.code ?? 'error',
    error?.message ?? (statusText || `HTTP ${status}`),
    error?.field,
  );
}

export async function request(
  path: string,
  parameters: Record<string, string>,
  init: { method?: string; body?: BodyInit; headers?: Record<string, string> } = {},
): Promise<Response> {
  const response = await fetch(apiUrl(path, parameters), {
    method: init.method ?? 'GET',
    headers: { accept: 'application/json', ...init.headers },
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
  if (!response.ok) throw failureOf(response.status, response.statusText, await response.text());
  return response;
}

export async function requestJson<T>(
  path: string,
  parameters: Record<string, string>,
  init: Parameters<typeof request>[2] = {},
): Promise<T> {
  return (await request(path, parameters, init)).json() as Promise<T>;
}

/**
 * A request whose body's progress is reported as it is sent: XMLHttpRequest, since fetch in browsers
 * reports none for request bodies. Answers the response text; a status outside 2xx is an ApiFailure.
 */
export function sendWithProgress(
  method: string,
  url: string | URL,
  body: XMLHttpRequestBodyInit,
  headers: Record<string, string>,
  onProgress: (sent: number, total: number) => void,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    xhr.upload.addEventListener('progress', (event) => {
      if (event.lengthComputable) onProgress(event.loaded, event.total);
    });
    xhr.addEventListener('load', () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve(xhr.responseText);
      else reject(failureOf(xhr.status, xhr.statusText, xhr.responseText));
    });
    xhr.addEventListener('error', () => reject(new Error('The connection failed.')));
    xhr.addEventListener('abort', () => reject(new Error('The upload was stopped.')));
    xhr.send(body);
  });
}
