import { describe, expect, it } from 'vitest';
import { resourceOf } from '../../core/logs/resource-of.js';

describe('resourceOf: which resource a request calls', () => {
  it('recognises agent calls, and agent health as a non-call', () => {
    expect(resourceOf('POST', '/api/v1/hello/invoke')).toEqual({ resource: 'agent', name: 'hello', operation: 'invoke', invocation: true });
    expect(resourceOf('POST', '/api/v1/hello/invoke/stream')?.operation).toBe('stream');
    expect(resourceOf('POST', '/api/v1/hello/chat')?.operation).toBe('chat');
    expect(resourceOf('POST', '/api/v1/hello/threads/t1/approve')).toMatchObject({ resource: 'agent', operation: 'approve', invocation: true });
    expect(resourceOf('GET', '/api/v1/hello/health')).toMatchObject({ resource: 'agent', invocation: false });
    expect(resourceOf('GET', '/api/v1/hello/invoke')).toBeUndefined();
    expect(resourceOf('GET', '/api/v1/hello/threads')).toBeUndefined();
  });

  it('never takes fixed routes for agents', () => {
    for (const path of ['/api/v1/tasks/abc', '/api/v1/logs/analyze', '/api/v1/control/maintenance', '/api/v1/agents', '/api/v1/status', '/health']) {
      expect(resourceOf('POST', path), path).toBeUndefined();
    }
  });

  it('recognises plugin, ingestor, pipeline and endpoint calls', () => {
    expect(resourceOf('POST', '/api/v1/plugins/iris/predict')).toEqual({ resource: 'plugin', name: 'iris', operation: 'predict', invocation: true });
    expect(resourceOf('POST', '/api/v1/plugins/iris/predict/batch')).toMatchObject({ operation: 'batch', invocation: true });
    expect(resourceOf('GET', '/api/v1/plugins/iris/health')).toMatchObject({ resource: 'plugin', invocation: false });
    expect(resourceOf('POST', '/api/v1/plugins/reload')).toBeUndefined();
    expect(resourceOf('POST', '/api/v1/ingestion/docs/run/async')).toEqual({ resource: 'ingestor', name: 'docs', operation: 'run.async', invocation: true });
    expect(resourceOf('POST', '/api/v1/pipelines/nightly/run')).toMatchObject({ resource: 'pipeline', name: 'nightly', invocation: true });
    expect(resourceOf('GET', '/api/v1/pipelines/nightly')).toMatchObject({ resource: 'pipeline', invocation: false });
    expect(resourceOf('GET', '/api/v1/endpoints/weather/today')).toEqual({ resource: 'endpoint', name: 'weather', operation: 'GET /today', invocation: true });
    expect(resourceOf('GET', '/api/v1/endpoints')).toBeUndefined();
  });
});
