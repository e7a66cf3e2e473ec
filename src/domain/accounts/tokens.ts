// Token strings: "secret-token:" + base58 of 16 random bytes, in the GMP-style alphabet the reference
// implementation uses (0-9, A-Z, a-v). Only the SHA3-256 hex of the whole string is stored.
import { hash, randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuv';
export const TOKEN_PATTERN = /^secret-token:[0-9A-Za-v]{1,22}$/;

function base58(bytes: Buffer): string {
  let value = BigInt(`0x${bytes.toString('hex') || '0'}`);
  let out = '';
  while (value > 0n) {
    out = ALPHABET[Number(value % 58n)] + out;
    value /= 58n;
  }
  return out || '0';
}

export const generateToken = (): string => `secret-token:${base58(randomBytes(16))}`;
export const hashToken = (token: string): string => hash('sha3-256', token, 'hex');
