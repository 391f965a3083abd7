// Preloaded into a child process (`node --import ./test/support/loaded-modules.mjs ...`): when
// the process exits, writes the files of every CommonJS module it loaded (require.cache, which
// also holds the CommonJS packages ES modules import) to LOADED_MODULES_FILE, as JSON.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const file = process.env.LOADED_MODULES_FILE;
if (file) process.on('exit', () => writeFileSync(file, JSON.stringify(Object.keys(require.cache))));
