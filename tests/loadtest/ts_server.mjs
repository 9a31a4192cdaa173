// An MCP server on the official TypeScript SDK v2 (@modelcontextprotocol/server), written
// the way the SDK's docs show, with three tools of the test's own that the lab has never seen:
// book_room asks a form (minimum/maximum, an enum, format email), transfer asks twice when
// the amount is high (a code of six characters, then a date), summarize spends about 10 ms of
// CPU and asks nothing.
//
//   MCP_TS_SDK_MODULES=.../node_modules node ts_server.mjs PORT

import http from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(`${process.env.MCP_TS_SDK_MODULES}/`);
const { McpServer, acceptedContent, createMcpHandler, inputRequired } = require('@modelcontextprotocol/server');
const { toNodeHandler } = require('@modelcontextprotocol/node');
const { z } = require('zod');

const text = value => ({ content: [{ type: 'text', text: value }] });
const failed = value => ({ content: [{ type: 'text', text: value }], isError: true });

const booking = z.object({
    attendees: z.number().int().min(1).max(20),
    room: z.enum(['Atlas', 'Borealis', 'Cirrus']),
    email: z.string().email()
});
// The SDK refuses a `pattern` in a form (the spec's forms have none): six characters it is.
const code = z.object({ code: z.string().min(6).max(6) });
const day = z.object({ on: z.string().date() });

function build() {
    const server = new McpServer({ name: 'rooms-and-money-ts', version: '1.0.0' });
    server.registerTool(
        'book_room',
        { description: 'Book a meeting room; asks who comes, where, and whom to tell.', inputSchema: z.object({ title: z.string() }) },
        async ({ title }, ctx) => {
            const form = acceptedContent(ctx.mcpReq.inputResponses, 'booking');
            if (!form) {
                return inputRequired({
                    inputRequests: { booking: inputRequired.elicit({ message: 'Booking details', requestedSchema: booking }) }
                });
            }
            const checked = booking.safeParse(form);
            if (!checked.success) return failed(`invalid booking: ${checked.error.message}`);
            return text(`${title}: ${form.room} for ${form.attendees}, confirmation to ${form.email}`);
        }
    );
    server.registerTool(
        'transfer',
        { description: 'Send money; a high amount asks for a code, then a date.', inputSchema: z.object({ amount: z.number().int() }) },
        async ({ amount }, ctx) => {
            if (amount < 1000) return text(`sent ${amount}`);
            const carried = ctx.mcpReq.requestState();
            const given = carried ?? acceptedContent(ctx.mcpReq.inputResponses, 'code')?.code;
            if (!given) {
                return inputRequired({
                    inputRequests: { code: inputRequired.elicit({ message: 'Your 6-digit code', requestedSchema: code }) }
                });
            }
            if (given.length !== 6) return failed(`the code must be six characters, got ${given}`);
            const when = acceptedContent(ctx.mcpReq.inputResponses, 'date')?.on;
            if (!when) {
                return inputRequired({
                    inputRequests: { date: inputRequired.elicit({ message: 'When?', requestedSchema: day }) },
                    requestState: given
                });
            }
            return text(`sent ${amount} on ${when}`);
        }
    );
    server.registerTool(
        'summarize',
        { description: 'Summarize a text (about 10 ms of CPU).', inputSchema: z.object({ text: z.string() }) },
        async ({ text: body }) => {
            // Busy for 10 ms by the clock (asking the CPU count in the loop would cost more).
            const until = performance.now() + 10;
            while (performance.now() < until);
            return text(body.slice(0, 20));
        }
    );
    return server;
}

const [port] = process.argv.slice(2);
http.createServer(toNodeHandler(createMcpHandler(build))).listen(Number(port), '127.0.0.1');
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
