;;; org_view.el --- Emacs's own view of org files, as JSON: the reference groundskeeper is held to.
;; emacs -Q --batch -l org_view.el IN.org OUT.json [IN.org OUT.json ...]
;; Per headline: line, level, todo keyword, priority, title (org-element's raw value), local
;; tags, the ID and done-when properties (org-entry-get, literal), and whether it or an
;; ancestor is commented. Per file: the TODO keywords and which of them are done states, and the
;; lines that org's own statistics update (org-update-statistics-cookies) would change.
(require 'org)
(require 'org-element)
(require 'json)

(defun org-view--commented (headline)
  (let ((h headline) found)
    (while (and h (not found))
      (when (and (eq (org-element-type h) 'headline) (org-element-property :commentedp h))
        (setq found t))
      (setq h (org-element-property :parent h)))
    found))

(defun org-view--file (file)
  (with-current-buffer (find-file-noselect file t)
    (org-mode)
    (let (headlines)
      (org-element-map (org-element-parse-buffer 'headline) 'headline
        (lambda (h)
          (let ((begin (org-element-property :begin h))
                (priority (org-element-property :priority h)))
            (save-excursion
              (goto-char begin)
              (push `((line . ,(line-number-at-pos begin))
                      (level . ,(org-element-property :level h))
                      (todo . ,(org-element-property :todo-keyword h))
                      (priority . ,(and priority (char-to-string priority)))
                      (title . ,(org-element-property :raw-value h))
                      (tags . ,(vconcat (org-element-property :tags h)))
                      (id . ,(org-entry-get nil "ID" nil t))
                      (done_when . ,(org-entry-get nil "done-when" nil t))
                      (commented . ,(if (org-view--commented h) t :json-false)))
                    headlines)))))
      `((todo_keywords . ,(vconcat org-todo-keywords-1))
        (done_keywords . ,(vconcat org-done-keywords))
        (headlines . ,(vconcat (nreverse headlines)))
        (stale_cookie_lines . ,(vconcat (org-view--stale-cookies)))))))

(defun org-view--stale-cookies ()
  (let ((before (split-string (buffer-string) "\n")) after (n 1) stale)
    (org-update-statistics-cookies 'all)
    (setq after (split-string (buffer-string) "\n"))
    (while before
      (unless (equal (car before) (car after)) (push n stale))
      (setq before (cdr before) after (cdr after) n (1+ n)))
    (set-buffer-modified-p nil)
    (nreverse stale)))

(let ((args command-line-args-left))
  (setq command-line-args-left nil)
  (while args
    (let* ((in (pop args)) (out (pop args))
           (json-encoding-pretty-print nil)
           (coding-system-for-write 'utf-8-unix))
      (with-temp-file out
        (insert (json-encode (org-view--file in)))))))
