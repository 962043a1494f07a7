// The plugin's exposed modules as the harness imports them (webpack.config.js aliases `@exposed/<name>` to the
// module package.json's consolePlugin.exposedModules names): what the console gives each extension.
declare module '@exposed/RolloutTab' {
  import type { ComponentType } from 'react';
  import type { K8sResourceCommon } from './sdk-adapter';

  const RolloutTab: ComponentType<{ obj: K8sResourceCommon }>;
  export default RolloutTab;
}

declare module '@exposed/runConfigActions' {
  import type { K8sResourceCommon } from './sdk-adapter';

  const useRunConfigActions: (obj: K8sResourceCommon) => [unknown[], boolean, unknown];
  export default useRunConfigActions;
}

declare module '@exposed/NodeGateStatus' {
  import type { ComponentType } from 'react';
  import type { K8sResourceCommon } from './sdk-adapter';

  const NodeGateStatus: ComponentType<{ obj: K8sResourceCommon }>;
  export default NodeGateStatus;
}
