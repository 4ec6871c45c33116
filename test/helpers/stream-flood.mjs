/**
 * `node stream-flood.mjs URL N`: N streamed Messages requests against the provider emulator at
 * URL, arriving over about a second (100 at a time), each read to its first chunk and then
 * dropped, as clients that start many streams do. A process of its own, so that a test's probe
 * of the server does not wait behind these clients' own work. Prints `{"streams","failed"}`.
 */
const [url, count] = process.argv.slice(2);
const total = Number(count);
let failed = 0;
const streams = [];
for (let i = 0; i < total; i++) {
  if (i % 100 === 99) await new Promise((resolve) => setTimeout(resolve, 100));
  streams.push(
    fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': `k${i % 10}`, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 32_000,
        stream: true,
        messages: [{ role: 'user', content: `go ${i}` }],
      }),
    })
      .then(async (response) => {
        const reader = response.body.getReader();
        await reader.read();
        await reader.cancel();
      })
      .catch(() => {
        failed += 1;
      }),
  );
}
await Promise.all(streams);
process.stdout.write(`${JSON.stringify({ streams: total, failed })}\n`);
