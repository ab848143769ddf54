import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { RedlockModuleOptions } from './redlock-module-options.interface.js';

export const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN: REDLOCK_MODULE_OPTIONS } =
  new ConfigurableModuleBuilder<RedlockModuleOptions>({ moduleName: 'Redlock' })
    .setClassMethodName('forRoot')
    .setExtras({ isGlobal: false }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
    .build();
