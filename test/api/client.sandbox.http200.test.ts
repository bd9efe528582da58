/** The client against the sandbox, every error of the contract answered HTTP 200 (client-against-sandbox.ts). */
import { clientAgainstSandbox } from './client-against-sandbox.ts';

clientAgainstSandbox('every error with HTTP 200');
