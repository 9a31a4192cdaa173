// The bench's tools on the official TypeScript SDK v2 (@modelcontextprotocol/server): the
// same MRTR rounds as the lab's server and the Python SDK peer, written the way the SDK's
// docs show: a factory building an McpServer per HTTP request (createMcpHandler), served by
// node:http through toNodeHandler (@modelcontextprotocol/node).
//
//   node typescript.mjs PORT plain|hmac
//
// `plain` carries requestState as the SDK does by default (a JSON string, unprotected);
// `hmac` seals it with the SDK's createRequestStateCodec (HMAC-SHA256, expiry, bound to the
// method and principal as its docs show) and verifies it before the handler runs.
// MCP_TS_SDK_MODULES names the node_modules folder the SDK was installed into.

import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(`${process.env.MCP_TS_SDK_MODULES}/`);
const {
    McpServer,
    acceptedContent,
    createMcpHandler,
    createRequestStateCodec,
    inputRequired
} = require('@modelcontextprotocol/server');
const { toNodeHandler } = require('@modelcontextprotocol/node');
const { z } = require('zod');

const [port, mode] = process.argv.slice(2);
const codec =
    mode === 'hmac'
        ? createRequestStateCodec({
              key: randomBytes(32),
              bind: ctx => `${ctx.mcpReq.method}\0${ctx.http?.authInfo?.clientId ?? ''}`
          })
        : null;

// requestState in and out, the one place the two modes differ.
const mint = async (payload, ctx) => (codec ? codec.mint(payload, ctx) : JSON.stringify(payload));
const carried = ctx => {
    const state = ctx.mcpReq.requestState();
    if (state === undefined) return {};
    return codec ? state : JSON.parse(state);
};
const text = value => ({ content: [{ type: 'text', text: value }] });

const login = z.object({ name: z.string() });
const resolution = z.object({ resolution: z.string() });
const duplicate = z.object({ duplicateOfId: z.number() });

// h = sha256(h || i as 8-byte big-endian), from sha256("crunch"): the lab's crunch chain.
function crunchUnit(digestHex, i) {
    const index = Buffer.alloc(8);
    index.writeBigUInt64BE(BigInt(i));
    return createHash('sha256').update(Buffer.from(digestHex, 'hex')).update(index).digest('hex');
}
const CRUNCH_START = createHash('sha256').update('crunch').digest('hex');

function build() {
    const server = new McpServer(
        { name: 'mrtr-bench-ts-peer', version: '1.0.0' },
        codec ? { requestState: { verify: codec.verify } } : {}
    );
    server.registerTool(
        'get_weather',
        {
            description: 'Current weather for a location; asks for your GitHub login first.',
            inputSchema: z.object({ location: z.string() })
        },
        async ({ location }, ctx) => {
            const who = acceptedContent(ctx.mcpReq.inputResponses, 'github_login');
            if (!who?.name) {
                return inputRequired({
                    inputRequests: {
                        github_login: inputRequired.elicit({
                            message: 'Please provide your GitHub username',
                            requestedSchema: login
                        })
                    }
                });
            }
            return text(`Weather in ${location} for ${who.name}: Sunny, 21°C`);
        }
    );
    server.registerTool(
        'update_work_item',
        {
            description: 'Update a work item; resolving a bug asks for its resolution.',
            inputSchema: z.object({ workItemId: z.number(), fields: z.record(z.string(), z.unknown()) })
        },
        async ({ workItemId, fields }, ctx) => {
            if (fields['System.State'] !== 'Resolved') return text(`Bug #${workItemId} updated`);
            const state = carried(ctx);
            const how =
                state.resolution ?? acceptedContent(ctx.mcpReq.inputResponses, 'resolution')?.resolution;
            if (!how) {
                return inputRequired({
                    inputRequests: {
                        resolution: inputRequired.elicit({
                            message: `How was Bug #${workItemId} resolved?`,
                            requestedSchema: resolution
                        })
                    }
                });
            }
            if (how !== 'Duplicate') return text(`Bug #${workItemId} resolved as ${how}`);
            const original = acceptedContent(ctx.mcpReq.inputResponses, 'duplicate_of')?.duplicateOfId;
            if (original === undefined) {
                return inputRequired({
                    inputRequests: {
                        duplicate_of: inputRequired.elicit({
                            message: 'Which work item is the original?',
                            requestedSchema: duplicate
                        })
                    },
                    requestState: await mint({ resolution: how }, ctx)
                });
            }
            return text(`Bug #${workItemId} resolved as Duplicate of Bug #${original}`);
        }
    );
    server.registerTool(
        'crunch',
        {
            description: 'Hash work that moves between rounds: one unit per round, the progress in requestState.',
            inputSchema: z.object({ units: z.number().int() })
        },
        async ({ units }, ctx) => {
            const state = carried(ctx);
            let done = state.i ?? 0;
            let digest = state.h ?? CRUNCH_START;
            if (done < units) digest = crunchUnit(digest, done++);
            if (done < units) return inputRequired({ requestState: await mint({ i: done, h: digest }, ctx) });
            return text(`crunch of ${units} units: ${digest}`);
        }
    );
    return server;
}

const handler = createMcpHandler(build);
http.createServer(toNodeHandler(handler)).listen(Number(port), '127.0.0.1');
// Exit cleanly on a stop, so Node's exit hooks (profilers, for one) run.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
