// /healthz's engine checks beyond the heartbeat: an agent stopped by an
// exception leaves the duty cycles ticking, but what it drove is dead.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { stoppedAgentProblem } from '../../src/gateway/health.js';

test('an engine agent stopped by an exception makes the gateway unhealthy, naming the agent and the message', () => {
  assert.equal(stoppedAgentProblem({ agentsStopped: 0, faults: [] }), undefined);
  assert.equal(
    stoppedAgentProblem({ agentsStopped: 0, faults: [{ agent: 'feed', message: 'record handler threw', stopped: false }] }),
    undefined,
    'a skipped record is counted, not a dead agent',
  );
  assert.equal(
    stoppedAgentProblem({
      agentsStopped: 1,
      faults: [
        { agent: 'feed', message: 'record handler threw', stopped: false },
        { agent: 'orders', message: 'std::bad_alloc', stopped: true },
      ],
    }),
    'engine agent stopped after an exception (1 stopped: orders: std::bad_alloc)',
  );
});
