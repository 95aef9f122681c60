/**
 * Example: an express Router as an endpoint. Code you already have for express mounts as it is,
 * under /api/v1/endpoints/notes-router/:
 *
 *   GET  /api/v1/endpoints/notes-router/notes          → every note, newest first (?q= filters)
 *   GET  /api/v1/endpoints/notes-router/notes/:id      → one note, 404 {detail} when unknown
 *   POST /api/v1/endpoints/notes-router/notes          {"text": "…"} → 201 with the note
 *
 * Hangar runs its own checks first (token, Host, cross-site, rate limit, maintenance), so the router
 * only sees calls it may answer; `req.principal` says who called, and `req.body` is the JSON body
 * Hangar already parsed. Saving this file swaps the router at once; the notes live in the module,
 * so a save starts an empty list (keep real data in a store).
 */
import { Router } from 'express';

interface Note {
  id: number;
  text: string;
  author: string;
  created_at: string;
}

const notes: Note[] = [];
const router = Router();

router.get('/notes', (req, res) => {
  const q = typeof req.query.q === 'string' ? req.query.q.toLowerCase() : '';
  res.json({ notes: notes.filter((n) => n.text.toLowerCase().includes(q)).reverse() });
});

router.get('/notes/:id', (req, res) => {
  const note = notes.find((n) => n.id === Number(req.params.id));
  if (!note) {
    res.status(404).json({ detail: `note ${req.params.id} not found` });
    return;
  }
  res.json(note);
});

router.post('/notes', (req, res) => {
  const text = (req.body as { text?: unknown } | undefined)?.text;
  if (typeof text !== 'string' || text.trim() === '') {
    res.status(422).json({ detail: 'body.text: a non-empty string is required' });
    return;
  }
  const note: Note = { id: notes.length + 1, text, author: req.principal ?? 'anonymous', created_at: new Date().toISOString() };
  notes.push(note);
  res.status(201).location(`${req.baseUrl}/notes/${note.id}`).json(note);
});

export default router;
