// Advanced search: a pipeline editor (the request body as JSON, with an example of each step type to add), the
// results as a list and on a diagram, and the debug timeline of the steps.
import { type DebugEntry, labelOf, request, type SearchResponse } from '../api.js';
import type { Diagram } from '../diagram.js';
import { h, replace } from '../dom.js';
import { count } from '../format.js';
import { jsonEditor } from '../json-editor.js';
import { attempt } from '../problem.js';
import { navigate } from '../router.js';
import { typeBadge } from '../types.js';

const EXAMPLES: { label: string; step: Record<string, unknown> }[] = [
  {
    label: 'Query DSL step',
    step: {
      type: 'searchengine-query-dsl-mixin',
      query: { bool: { should: [{ match: { name: { query: 'example', fuzziness: 'AUTO' } } }] } },
      parameters: { pageSize: 25 },
    },
  },
  {
    label: 'Cypher path step',
    step: { type: 'cypher-path-subset', query: 'MATCH path=((a)-[r]->(b)) RETURN path LIMIT 10' },
  },
  {
    label: 'Hydration step',
    step: { type: 'element-hydration', query: { elementIds: '{{map(stepResults[0].elements, #.id)}}' } },
  },
];

const INITIAL = { debug: true, steps: [{ type: 'searchengine-query-dsl-mixin', query: { match_all: {} } }] };

// The last pipeline survives leaving the view and coming back.
let lastPipeline: unknown = INITIAL;
let previousDiagram: Diagram | null = null;

/** The pipeline editor, its results, their diagram and the timeline (the diagram library is loaded here). */
export async function advancedSearch(): Promise<HTMLElement> {
  const editor = jsonEditor('Search request (JSON: debug and steps)', lastPipeline, { rows: 14, objectOnly: true });
  const status = h('div');
  const results = h('div', { class: 'results advanced-results' });
  const timeline = h('div', { class: 'timeline' });
  previousDiagram?.destroy();
  const { Diagram } = await import('../diagram.js');
  const diagram = new Diagram('Search results diagram', (id) => navigate(`#/${id}`));
  previousDiagram = diagram;
  const addStep = (step: Record<string, unknown>) => {
    const current = editor.value() as { steps?: unknown[] } | undefined;
    const body = current ?? { debug: true, steps: [] };
    body.steps = [...(Array.isArray(body.steps) ? body.steps : []), step];
    editor.setValue(body);
  };
  const form = h(
    'form',
    { 'aria-labelledby': 'pipeline-heading' },
    h('h2', { id: 'pipeline-heading' }, 'Pipeline'),
    editor.element,
    h(
      'div',
      { class: 'buttons', role: 'group', 'aria-label': 'Add an example step' },
      'Add an example: ',
      EXAMPLES.map(({ label, step }) => [h('button', { type: 'button', onclick: () => addStep(step) }, label), ' ']),
    ),
    h('button', { type: 'submit', class: 'primary' }, 'Run search'),
    status,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const body = editor.value();
    if (body === undefined) return;
    lastPipeline = body;
    // A failed search leaves no earlier results under its error.
    replace(results);
    replace(timeline);
    diagram.clear();
    void attempt(status, async () => {
      const answer = await request<SearchResponse>('POST', '/search', body);
      showResults(answer.body, results, diagram);
      showTimeline(answer.body.debug, timeline);
    });
  });
  replace(results, h('p', null, 'Run the pipeline to see results.'));
  replace(timeline, h('p', null, 'Set "debug": true to see each step.'));
  return h(
    'div',
    { class: 'element-layout' },
    h(
      'div',
      { class: 'element-main' },
      form,
      h(
        'section',
        { 'aria-labelledby': 'advanced-results-heading' },
        h('h2', { id: 'advanced-results-heading' }, 'Pipeline results'),
        results,
      ),
    ),
    h(
      'div',
      { class: 'element-side' },
      h(
        'section',
        { 'aria-labelledby': 'results-diagram-heading' },
        h('h2', { id: 'results-diagram-heading' }, 'Results diagram'),
        diagram.element,
      ),
      h(
        'section',
        { 'aria-labelledby': 'timeline-heading' },
        h('h2', { id: 'timeline-heading' }, 'Debug timeline'),
        timeline,
      ),
    ),
  );
}

function showResults(response: SearchResponse, slot: HTMLElement, diagram: Diagram): void {
  diagram.clear();
  diagram.add(response.results);
  if (response.results.length === 0) {
    replace(slot, h('p', { class: 'empty' }, 'No results.'));
    return;
  }
  replace(
    slot,
    h('p', null, `${count(response.results.length, 'element')}.`),
    h(
      'ol',
      { class: 'elements' },
      response.results.map((element) =>
        h(
          'li',
          { 'data-id': element.id },
          h('a', { href: `#/${element.id}` }, labelOf(element)),
          ' ',
          typeBadge(element.type),
          element.start ? ` ${element.start.slice(0, 8)} → ${element.end?.slice(0, 8)}` : null,
        ),
      ),
    ),
  );
}

/** Each step as a bar on one time axis, from the first step's start to the last one's end. */
function showTimeline(debug: DebugEntry[] | undefined, slot: HTMLElement): void {
  if (!debug || debug.length === 0) {
    replace(slot, h('p', null, 'No debug output (the request did not set "debug": true).'));
    return;
  }
  const first = Math.min(...debug.map((entry) => entry.start));
  const total = Math.max(...debug.map((entry) => entry.end)) - first || 1e-6;
  replace(
    slot,
    h(
      'ol',
      { class: 'steps' },
      debug.map((entry, index) => {
        const bar = h('span', { class: 'bar' });
        bar.style.marginLeft = `${((entry.start - first) / total) * 100}%`;
        bar.style.width = `${Math.max((entry.duration / total) * 100, 1)}%`;
        return h(
          'li',
          { 'data-step': index },
          h('span', { class: 'step-name' }, `${index + 1}. ${entry['step-handler']}`),
          h('span', { class: 'step-duration' }, `${(entry.duration * 1000).toFixed(2)} ms`),
          h('span', { class: 'track', 'aria-hidden': 'true' }, bar),
          h(
            'details',
            null,
            h('summary', null, 'Step details'),
            h('pre', { tabindex: '0' }, JSON.stringify(entry, null, 2)),
          ),
        );
      }),
    ),
  );
}
