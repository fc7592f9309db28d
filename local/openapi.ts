import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '#api/openapi-document';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Where the OpenAPI document is kept in the repository, and served from by the API. */
const file = join(root, 'functions', 'api', 'openapi.json');

/** `npm run openapi`: writes the OpenAPI document of every route, formatted as Biome formats JSON. */
writeFileSync(file, JSON.stringify(openApiDocument()));
execFileSync(join(root, 'node_modules', '.bin', 'biome'), ['format', '--write', file], { stdio: 'ignore' });
console.log(`Wrote ${file}`);
