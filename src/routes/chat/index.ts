/** Every route of the chat API, in one list the router and the API description are built from. */
import type { Route } from '../../http/route.js';
import { deleteEvents, getEvents } from './events.js';
import { getMessage, getMessages, sendMessage, updateFlags } from './messages.js';
import { register } from './register.js';
import { fetchApiKey, getServerSettings } from './server.js';
import { getStreamId, listOwnSubscriptions, listStreams, subscribe, unsubscribe } from './streams.js';
import { createUser, deactivateUser, getOwnUser, getUserById, listUsersRoute, reactivateUser } from './users.js';

export const chatRoutes: Route[] = [
  getServerSettings,
  fetchApiKey,
  register,
  getEvents,
  deleteEvents,
  sendMessage,
  getMessages,
  getMessage,
  updateFlags,
  listUsersRoute,
  getOwnUser,
  getUserById,
  createUser,
  deactivateUser,
  reactivateUser,
  listStreams,
  getStreamId,
  listOwnSubscriptions,
  subscribe,
  unsubscribe,
];
