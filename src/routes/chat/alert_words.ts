/**
 * The caller's alert words: list, add, remove. Each answer is the whole list.
 */
import { route, S } from '../../http/route.js';

export const listAlertWords = route({
  method: 'GET',
  path: '/api/v1/users/me/alert_words',
  operationId: 'getAlertWords',
  auth: 'user',
  summary: "The caller's alert words",
  params: {},
  handler({ org, user, runtime }) {
    return { json: { alert_words: [...(runtime.org(org.id)!.alertWords.get(user.user_id) ?? [])] } };
  },
});

export const addAlertWords = route({
  method: 'POST',
  path: '/api/v1/users/me/alert_words',
  operationId: 'addAlertWords',
  auth: 'user',
  summary: 'Add alert words (at most 100 characters each, and 1000 in all; a word already there, whatever its case, is not added twice)',
  params: { alert_words: { schema: S.strArray, required: true } },
  async handler({ params, org, user, runtime }) {
    const value = await runtime.execute({ type: 'CHANGE_ALERT_WORDS', org: org.id, user_id: user.user_id, op: 'add', words: params.alert_words });
    return { json: value };
  },
});

export const removeAlertWords = route({
  method: 'DELETE',
  path: '/api/v1/users/me/alert_words',
  operationId: 'removeAlertWords',
  auth: 'user',
  summary: 'Remove alert words',
  params: { alert_words: { schema: S.strArray, required: true } },
  async handler({ params, org, user, runtime }) {
    const value = await runtime.execute({ type: 'CHANGE_ALERT_WORDS', org: org.id, user_id: user.user_id, op: 'remove', words: params.alert_words });
    return { json: value };
  },
});
