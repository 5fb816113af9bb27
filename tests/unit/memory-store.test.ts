/** The in-memory store, held to the Store contract (tests/support/store-contract.ts). */
import { describe } from 'vitest';
import { createMemoryStore } from '../../services/store/memory.store.js';
import { describeStoreContract } from '../support/store-contract.js';

describe('memory store', () => {
  describeStoreContract(() => createMemoryStore());
});
