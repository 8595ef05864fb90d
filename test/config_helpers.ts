import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh directory holding `parley.toml` with this text. */
export function withConfigFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'parley-config-'));
  writeFileSync(join(dir, 'parley.toml'), text);
  return dir;
}
