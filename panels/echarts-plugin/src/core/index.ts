/**
 * The chart core: pure and host-free (no DOM, no fetch). The bridge's page
 * and the Grafana panel are thin hosts around it.
 */
export * from './numbers';
export * from './series';
export * from './m4';
export * from './smoothing';
export * from './envelope';
export * from './yRange';
export * from './format';
export * from './timeZone';
export * from './tooltip';
export * from './live';
export * from './palette';
export * from './theme';
export * from './runs';
export * from './layers';
export * from './seriesOptions';
export * from './options';
export * from './groups';
export * from './alerts';
export * from './histograms';
export * from './texts';
