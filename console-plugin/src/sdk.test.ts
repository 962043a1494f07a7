// The SDK's JSON-patch call is taken under either name the host provides.
import type { k8sPatchResource } from './sdk';

const patchFrom = (provided: Record<string, unknown>) => {
  let patch: typeof k8sPatchResource | undefined;
  jest.isolateModules(() => {
    jest.doMock('@openshift-console/dynamic-plugin-sdk', () => provided);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    patch = require('./sdk').k8sPatchResource;
  });
  return patch as typeof k8sPatchResource;
};

const options = {
  model: { kind: 'X' } as never,
  resource: {},
  data: [{ op: 'add', path: '/spec/paused', value: true }],
};

describe('k8sPatchResource', () => {
  afterEach(() => jest.dontMock('@openshift-console/dynamic-plugin-sdk'));

  it("is the 4.22 package's k8sPatch", async () => {
    const k8sPatch = jest.fn().mockResolvedValue({ ok: 1 });
    await expect(patchFrom({ k8sPatch })(options)).resolves.toEqual({ ok: 1 });
    expect(k8sPatch).toHaveBeenCalledWith(options);
  });

  it('or k8sPatchResource where the host names it so', async () => {
    const k8sPatchResource = jest.fn().mockResolvedValue({ ok: 2 });
    await expect(patchFrom({ k8sPatchResource, k8sPatch: jest.fn() })(options)).resolves.toEqual({ ok: 2 });
    expect(k8sPatchResource).toHaveBeenCalledWith(options);
  });

  it('fails without either', async () => {
    await expect(patchFrom({})(options)).rejects.toThrow('The console provides no k8sPatchResource');
  });
});
