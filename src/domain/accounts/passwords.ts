// Password hashing: argon2id for new hashes; verification reads the algorithm from the PHC string, so the argon2i
// hashes of reference-implementation backups verify too.
import { Algorithm, hash, verify } from '@node-rs/argon2';

export const hashPassword = (password: string): Promise<string> => hash(password, { algorithm: Algorithm.Argon2id });

// Verified against when the user is unknown, so that the response time does not tell whether the user exists.
const DUMMY_HASH = '$argon2id$v=19$m=19456,t=2,p=1$cxZvRvIDDGl19/0/pe2slg$54IGUfdAIoHPDns0NJpygOhj6+rXM91jVxr+CknFiKA';

export async function verifyPassword(phc: string | null | undefined, password: string): Promise<boolean> {
  try {
    const ok = await verify(phc || DUMMY_HASH, password);
    return ok && !!phc;
  } catch {
    return false; // a malformed stored hash never authenticates
  }
}
