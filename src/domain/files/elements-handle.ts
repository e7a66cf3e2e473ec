// Elements.require takes the handle of the transaction it runs in; the Transactions port hands out that handle as
// its Tx (storage/transactions.ts), so the one stands for the other.
import type { Elements } from '../elements/elements.js';
import type { Tx } from '../transactions.js';

/** `tx` as Elements.require takes it (the same value: an identity once Elements takes a Tx itself). */
export const elementsHandle = (tx: Tx) => tx as unknown as Parameters<Elements['require']>[0];
