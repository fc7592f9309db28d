import { writeFileSync } from 'node:fs';
import { CLIENT_TYPES_FILE, clientTypes, OPENAPI_FILE, openApiJson } from './openapi-files.ts';

/** `npm run openapi`: writes the OpenAPI document of every route, and the client's types generated from it. */
const json = openApiJson();
writeFileSync(OPENAPI_FILE, json);
console.log(`Wrote ${OPENAPI_FILE}`);
writeFileSync(CLIENT_TYPES_FILE, await clientTypes(JSON.parse(json)));
console.log(`Wrote ${CLIENT_TYPES_FILE}`);
