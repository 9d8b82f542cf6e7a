// The error vocabulary lives in src/core (every layer, the physical one included, throws it).
export * from '../core/errors.js';
