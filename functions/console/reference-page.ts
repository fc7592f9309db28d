import { pageHead } from './page.ts';

/** JSON inside a script element: `<` escaped, so that no string in it can close the element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

/**
 * The API reference page: Swagger UI's script and stylesheet inlined (allowed by the response's nonce,
 * as the console's), rendering the OpenAPI document embedded in the page. Read-only: the console is
 * where the API is used from a browser.
 */
export function referencePage(
  assets: { script: string; style: string },
  document: unknown,
  nonce: string,
): string {
  return `${pageHead('Transcription API reference', assets.style, nonce)}
<body>
<main id="reference" aria-label="API reference"></main>
<script nonce="${nonce}">${assets.script}</script>
<script nonce="${nonce}">
SwaggerUIBundle({
  spec: ${scriptJson(document)},
  dom_id: '#reference',
  deepLinking: true,
  validatorUrl: null,
  supportedSubmitMethods: [],
  defaultModelsExpandDepth: 1,
});
</script>
</body>
</html>
`;
}
