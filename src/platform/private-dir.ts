/**
 * The data directory holds every tenant's text, e-mail addresses and key hashes, so it is the
 * service account's alone: directories 0700, files 0600. Everything the service writes there is
 * created so (FILE_MODE, DIR_MODE); a start also tightens what an older version or an operator
 * left looser, since a file's mode outlives the code that created it.
 */
import fs from 'node:fs/promises';
import path from 'node:path';

export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;

/** Bits that give a group or other accounts any access. */
const SHARED = 0o077;

export interface Tightened {
  files: number;
  dirs: number;
}

/**
 * Creates `dir` (0700) when missing, then takes group and other access (and files' execute bits)
 * off it and everything under it: directories become at most 0700, files at most 0600. Symbolic
 * links are left alone and not followed (their targets are not the service's to change).
 * Returns how many of each it changed.
 */
export async function makePrivateDir(dir: string): Promise<Tightened> {
  await fs.mkdir(dir, { recursive: true, mode: DIR_MODE });
  const tightened: Tightened = { files: 0, dirs: 0 };
  const walk = async (p: string): Promise<void> => {
    let st;
    try {
      st = await fs.lstat(p);
    } catch {
      return; // removed meanwhile (a temp file)
    }
    if (st.isDirectory()) {
      if ((st.mode & SHARED) !== 0) {
        await fs.chmod(p, st.mode & DIR_MODE);
        tightened.dirs++;
      }
      for (const name of await fs.readdir(p)) await walk(path.join(p, name));
    } else if (st.isFile() && (st.mode & 0o777 & ~FILE_MODE) !== 0) {
      await fs.chmod(p, st.mode & FILE_MODE);
      tightened.files++;
    }
  };
  await walk(dir);
  return tightened;
}

/** The log line for what makePrivateDir changed, or null when it changed nothing. */
export function describeTightened(dir: string, t: Tightened): string | null {
  if (t.files === 0 && t.dirs === 0) return null;
  return `data directory ${dir}: took group and other access off ${t.files} file(s) and ${t.dirs} director${t.dirs === 1 ? 'y' : 'ies'} (now at most 0600 and 0700)`;
}
