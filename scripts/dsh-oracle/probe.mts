// Runs under DSH's own sources (see setup.mjs): for each {root, id, compression}
// job of a manifest, mounts DSH's JSONL backend on the root and prints one NDJSON
// line with the outcome of DSH's `inspect(id)`. Never run in CI.
import { readFileSync } from 'node:fs'
import { Context } from '@deepseek-ai/cordis'
import SessionStore from '@deepseek-ai/dsh-session'
import JsonlSessionPersistence from '@deepseek-ai/dsh-session-persistence-jsonl'

const jobs = JSON.parse(readFileSync(process.argv[2] as string, 'utf8')) as { key: string; root: string; id: string; compression: string }[]
const ctx = new Context()
await ctx.plugin(SessionStore)
for (const job of jobs) {
  const fiber = await ctx.plugin(JsonlSessionPersistence, { root: job.root, compression: job.compression })
  let out: Record<string, unknown>
  try {
    const r = await (ctx as any).sessionPersistence.inspect(job.id)
    out = { key: job.key, ok: true, events: r.events.length }
  } catch (e: any) {
    out = { key: job.key, ok: false, class: e?.name, message: String(e?.message) }
  }
  await fiber.dispose()
  process.stdout.write(JSON.stringify(out) + '\n')
}
process.exit(0)
