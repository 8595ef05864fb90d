// Sends "Hi!" to the channel general of a Parley server with the zulip-js client.
// Run it from the repository, with the password that the server's first start printed:
//   PARLEY_PASSWORD='...' node examples/send.mjs
// PARLEY_URL (default http://127.0.0.1:9991) and PARLEY_EMAIL (default owner@localhost)
// choose another server or user.
import zulip from 'zulip-js';

const client = await zulip({
  realm: process.env.PARLEY_URL ?? 'http://127.0.0.1:9991',
  username: process.env.PARLEY_EMAIL ?? 'owner@localhost',
  password: process.env.PARLEY_PASSWORD,
});
if (!client.config.apiKey) throw new Error('login failed: check PARLEY_EMAIL and PARLEY_PASSWORD');

const sent = await client.messages.send({ type: 'stream', to: 'general', topic: 'hello', content: 'Hi!' });
console.log(sent);
if (sent.result !== 'success') process.exitCode = 1;
