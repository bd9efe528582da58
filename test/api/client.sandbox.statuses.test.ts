/** The client against the sandbox, errors served with HTTP statuses (client-against-sandbox.ts). */
import { clientAgainstSandbox } from './client-against-sandbox.ts';

clientAgainstSandbox('statuses');
