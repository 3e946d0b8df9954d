//! Reads the text form back into a [`Body`]. Errors carry the line and column.

use crate::ir::*;
use std::fmt;

/// A syntax or structure error in MIR text, at a 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct ParseError {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Str(String),
    Comment(String),
    Punct(&'static str),
    Eof,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Word(w) => write!(f, "`{w}`"),
            Tok::Str(s) => write!(f, "{s:?}"),
            Tok::Comment(c) => write!(f, "comment `//{c}`"),
            Tok::Punct(p) => write!(f, "`{p}`"),
            Tok::Eof => f.write_str("end of input"),
        }
    }
}

struct Token {
    tok: Tok,
    line: u32,
    column: u32,
}

const PUNCTS: [&str; 14] = [
    "->", "(", ")", "{", "}", "[", "]", "<", ">", ",", ";", ":", "=", "&",
];

fn lex(src: &str) -> Result<Vec<Token>, ParseError> {
    let chars: Vec<char> = src.chars().collect();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let mut out = Vec::new();
    let err = |line, column, message: String| ParseError {
        line,
        column,
        message,
    };
    while i < chars.len() {
        let c = chars[i];
        let (tl, tc) = (line, col);
        let advance = |n: usize, i: &mut usize, line: &mut u32, col: &mut u32| {
            for _ in 0..n {
                if chars[*i] == '\n' {
                    *line += 1;
                    *col = 1;
                } else {
                    *col += 1;
                }
                *i += 1;
            }
        };
        if c.is_whitespace() {
            advance(1, &mut i, &mut line, &mut col);
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            let start = i + 2;
            let mut end = start;
            while end < chars.len() && chars[end] != '\n' {
                end += 1;
            }
            let text: String = chars[start..end].iter().collect();
            advance(end - i, &mut i, &mut line, &mut col);
            out.push(Token {
                tok: Tok::Comment(text),
                line: tl,
                column: tc,
            });
            continue;
        }
        if c == '"' {
            let (s, j) = string_literal(&chars, i).map_err(|m| err(tl, tc, m.into()))?;
            advance(j + 1 - i, &mut i, &mut line, &mut col);
            out.push(Token {
                tok: Tok::Str(s),
                line: tl,
                column: tc,
            });
            continue;
        }
        let starts_number = |k: usize| {
            chars
                .get(k)
                .is_some_and(|ch| ch.is_ascii_digit() || *ch == 'i')
        };
        if is_word(c) || (c == '-' && starts_number(i + 1)) {
            let j = word_end(&chars, i);
            let text: String = chars[i..j].iter().collect();
            advance(j - i, &mut i, &mut line, &mut col);
            out.push(Token {
                tok: Tok::Word(text),
                line: tl,
                column: tc,
            });
            continue;
        }
        let rest: String = chars[i..(i + 2).min(chars.len())].iter().collect();
        let Some(p) = PUNCTS.iter().find(|p| rest.starts_with(**p)) else {
            return Err(err(tl, tc, format!("unexpected character `{c}`")));
        };
        advance(p.len(), &mut i, &mut line, &mut col);
        out.push(Token {
            tok: Tok::Punct(p),
            line: tl,
            column: tc,
        });
    }
    out.push(Token {
        tok: Tok::Eof,
        line,
        column: col,
    });
    Ok(out)
}

/// Reads the string literal whose opening quote is at `chars[start]`: its value, with
/// escapes resolved, and the index of its closing quote.
fn string_literal(chars: &[char], start: usize) -> Result<(String, usize), &'static str> {
    let mut s = String::new();
    let mut j = start + 1;
    loop {
        match chars.get(j) {
            None => return Err("unterminated string"),
            Some('"') => return Ok((s, j)),
            Some('\\') => {
                let e = chars.get(j + 1).copied();
                j += 2;
                match e {
                    Some('n') => s.push('\n'),
                    Some('t') => s.push('\t'),
                    Some('r') => s.push('\r'),
                    Some('0') => s.push('\0'),
                    Some('\\') => s.push('\\'),
                    Some('"') => s.push('"'),
                    Some('\'') => s.push('\''),
                    Some('u') if chars.get(j) == Some(&'{') => {
                        let close = (j..chars.len()).find(|&k| chars[k] == '}');
                        let Some(close) = close else {
                            return Err("bad unicode escape");
                        };
                        let hex: String = chars[j + 1..close].iter().collect();
                        let ch = u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or("bad unicode escape")?;
                        s.push(ch);
                        j = close + 1;
                    }
                    _ => return Err("unknown string escape"),
                }
            }
            Some(&ch) => {
                s.push(ch);
                j += 1;
            }
        }
    }
}

/// Whether `ch` belongs to a word: a name, keyword or number (`1.5f32`).
fn is_word(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_' || ch == '.'
}

/// The end of the word that starts at `chars[start]`.
fn word_end(chars: &[char], start: usize) -> usize {
    let mut j = start + 1;
    while j < chars.len() {
        let ch = chars[j];
        // An exponent sign inside a float literal such as `1e-7f32`.
        let exponent_sign = (ch == '-' || ch == '+')
            && chars[j - 1] == 'e'
            && chars[start..j].iter().any(|d| d.is_ascii_digit());
        if is_word(ch) || exponent_sign {
            j += 1;
        } else {
            break;
        }
    }
    j
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
}

/// Parses a file holding exactly one kernel.
pub fn parse(src: &str) -> Result<Body, ParseError> {
    let mut bodies = parse_module(src)?;
    if bodies.len() != 1 {
        return Err(ParseError {
            line: 1,
            column: 1,
            message: format!("expected exactly one kernel, found {}", bodies.len()),
        });
    }
    Ok(bodies.remove(0))
}

/// Parses a file holding one or more kernels under one version header.
pub fn parse_module(src: &str) -> Result<Vec<Body>, ParseError> {
    let mut p = Parser {
        toks: lex(src)?,
        pos: 0,
    };
    let header = format!(" offload-mir v{}", crate::FORMAT_VERSION);
    match &p.peek().tok {
        Tok::Comment(c) if c.trim_end() == header.trim_end() => p.pos += 1,
        Tok::Comment(c) if c.trim_start().starts_with("offload-mir v") => {
            return Err(p.error(format!(
                "unsupported MIR format `{}`; this build reads `{}`",
                c.trim(),
                header.trim()
            )));
        }
        _ => return Err(p.error(format!("expected the header `//{header}`"))),
    }
    let mut bodies = Vec::new();
    while p.peek().tok != Tok::Eof {
        bodies.push(p.body()?);
    }
    if bodies.is_empty() {
        return Err(p.error("expected `kernel`".into()));
    }
    Ok(bodies)
}

impl Parser {
    fn peek(&self) -> &Token {
        &self.toks[self.pos]
    }

    fn error(&self, message: String) -> ParseError {
        let t = self.peek();
        ParseError {
            line: t.line,
            column: t.column,
            message,
        }
    }

    fn unexpected<T>(&self, what: &str) -> Result<T, ParseError> {
        Err(self.error(format!("expected {what}, found {}", self.peek().tok)))
    }

    fn next(&mut self) -> Tok {
        let t = self.toks[self.pos].tok.clone();
        if t != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, p: &str) -> bool {
        if matches!(&self.peek().tok, Tok::Punct(q) if *q == p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> Result<(), ParseError> {
        if self.eat(p) {
            Ok(())
        } else {
            self.unexpected(&format!("`{p}`"))
        }
    }

    fn eat_word(&mut self, w: &str) -> bool {
        if matches!(&self.peek().tok, Tok::Word(x) if x == w) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_word(&mut self, w: &str) -> Result<(), ParseError> {
        if self.eat_word(w) {
            Ok(())
        } else {
            self.unexpected(&format!("`{w}`"))
        }
    }

    fn word(&mut self, what: &str) -> Result<String, ParseError> {
        match &self.peek().tok {
            Tok::Word(w) => {
                let w = w.clone();
                self.pos += 1;
                Ok(w)
            }
            _ => self.unexpected(what),
        }
    }

    fn string(&mut self) -> Result<String, ParseError> {
        match self.next() {
            Tok::Str(s) => Ok(s),
            _ => {
                self.pos -= 1;
                self.unexpected("a string")
            }
        }
    }

    fn number<T: std::str::FromStr>(&mut self, what: &str) -> Result<T, ParseError> {
        let save = self.pos;
        let w = self.word(what)?;
        w.parse().map_err(|_| {
            self.pos = save;
            self.error(format!("expected {what}, found `{w}`"))
        })
    }

    fn span_comment(&mut self) -> Result<Span, ParseError> {
        let Tok::Comment(c) = &self.peek().tok else {
            return self.unexpected("a `// LINE:COLUMN` span comment");
        };
        let parsed = c.trim().split_once(':').and_then(|(l, c)| {
            Some(Span {
                line: l.parse().ok()?,
                column: c.parse().ok()?,
            })
        });
        match parsed {
            Some(span) => {
                self.pos += 1;
                Ok(span)
            }
            None => self.unexpected("a `// LINE:COLUMN` span comment"),
        }
    }

    fn local(&mut self) -> Result<Local, ParseError> {
        let save = self.pos;
        let w = self.word("a local such as `_1`")?;
        match w.strip_prefix('_').and_then(|n| n.parse().ok()) {
            Some(n) => Ok(Local(n)),
            None => {
                self.pos = save;
                self.unexpected("a local such as `_1`")
            }
        }
    }

    fn block_ref(&mut self) -> Result<BasicBlock, ParseError> {
        let save = self.pos;
        let w = self.word("a block such as `bb1`")?;
        match w.strip_prefix("bb").and_then(|n| n.parse().ok()) {
            Some(n) => Ok(BasicBlock(n)),
            None => {
                self.pos = save;
                self.unexpected("a block such as `bb1`")
            }
        }
    }

    fn scalar_ty(&mut self) -> Result<ScalarTy, ParseError> {
        let save = self.pos;
        let w = self.word("a scalar type")?;
        ScalarTy::from_name(&w).ok_or_else(|| {
            self.pos = save;
            self.error(format!("unknown scalar type `{w}`"))
        })
    }

    fn ty(&mut self) -> Result<Ty, ParseError> {
        if self.eat("(") {
            self.expect(")")?;
            return Ok(Ty::Unit);
        }
        if self.eat("&") {
            self.expect("[")?;
            let e = self.scalar_ty()?;
            self.expect("]")?;
            return Ok(Ty::Slice(e));
        }
        if self.eat_word("Atomic") {
            self.expect("<")?;
            let e = self.scalar_ty()?;
            self.expect(">")?;
            return Ok(Ty::Atomic(e));
        }
        if self.eat_word("Shared") {
            self.expect("<")?;
            let e = self.scalar_ty()?;
            self.expect(",")?;
            let len = if self.eat_word("dyn") {
                None
            } else {
                Some(Param::Value(self.number("an element count or `dyn`")?))
            };
            self.expect(">")?;
            return Ok(Ty::Shared(e, len));
        }
        if self.eat_word("Region") {
            self.expect("<")?;
            let e = self.scalar_ty()?;
            self.expect(",")?;
            let save = self.pos;
            let mut s = self.word("a partitioning strategy")?;
            // `Chunked<4>` and `Stencil2D<1>` carry a number.
            if self.eat("<") {
                let n: u32 = self.number("a strategy parameter")?;
                self.expect(">")?;
                s = format!("{s}<{n}>");
            }
            let Some(strategy) = Strategy::from_name(&s) else {
                self.pos = save;
                return Err(self.error(format!("unknown partitioning strategy `{s}`")));
            };
            self.expect(">")?;
            return Ok(Ty::Region(e, strategy));
        }
        Ok(Ty::Scalar(self.scalar_ty()?))
    }

    fn body(&mut self) -> Result<Body, ParseError> {
        let kind = if self.eat_word("kernel") {
            BodyKind::Kernel
        } else if self.eat_word("fn") {
            BodyKind::Device
        } else {
            return self.unexpected("`kernel` or `fn`");
        };
        let name = self.word("a name")?;
        self.expect("(")?;
        let (mut locals, arg_count) = self.arguments()?;
        let ret = match kind {
            BodyKind::Kernel => Ty::Unit,
            BodyKind::Device => {
                self.expect("->")?;
                self.ty()?
            }
        };
        self.expect("{")?;
        self.expect_word("file")?;
        let file = self.string()?;
        self.expect(";")?;
        let fp_contract = if self.eat_word("fp_contract") {
            self.expect_word("off")?;
            self.expect(";")?;
            false
        } else {
            true
        };
        self.let_declarations(&mut locals)?;
        let mut locals: Vec<LocalDecl> = locals
            .into_iter()
            .enumerate()
            .map(|(i, l)| l.ok_or_else(|| self.error(format!("local `_{i}` is never declared"))))
            .collect::<Result<_, _>>()?;
        while self.eat_word("debug") {
            let name = self.word("a variable name")?;
            self.expect("=")?;
            self.expect(">")?;
            let local = self.local()?;
            self.expect(";")?;
            let span = self.span_comment()?;
            let Some(decl) = locals.get_mut(local.index()) else {
                return Err(self.error(format!("`{local}` is not declared")));
            };
            decl.debug = Some((name, span));
        }
        let mut blocks = Vec::new();
        while !self.eat("}") {
            let b = self.block_ref()?;
            if b.index() != blocks.len() {
                return Err(self.error(format!("expected block `bb{}` here", blocks.len())));
            }
            self.expect(":")?;
            self.expect("{")?;
            blocks.push(self.block()?);
        }
        if locals[0].ty != ret {
            return Err(self.error(format!("`_0` must have the return type `{ret}`")));
        }
        Ok(Body {
            kind,
            name,
            file,
            fp_contract,
            locals,
            arg_count,
            blocks,
        })
    }

    /// The arguments `_1: T, ..` of a body up to the closing `)`: the locals they declare
    /// (`_0`, the return place, still undeclared) and their number.
    fn arguments(&mut self) -> Result<(Vec<Option<LocalDecl>>, usize), ParseError> {
        let mut locals: Vec<Option<LocalDecl>> = vec![None];
        let mut arg_count = 0;
        while !self.eat(")") {
            if arg_count > 0 {
                self.expect(",")?;
            }
            let mutable = self.eat_word("mut");
            let local = self.local()?;
            if local.index() != arg_count + 1 {
                return Err(self.error(format!(
                    "argument {} must be `_{}`",
                    arg_count + 1,
                    arg_count + 1
                )));
            }
            self.expect(":")?;
            let ty = self.ty()?;
            locals.push(Some(LocalDecl {
                ty,
                mutable,
                debug: None,
            }));
            arg_count += 1;
        }
        Ok((locals, arg_count))
    }

    /// The `let _n: T;` declarations of a body, each added to `locals` at its index.
    fn let_declarations(&mut self, locals: &mut Vec<Option<LocalDecl>>) -> Result<(), ParseError> {
        while self.eat_word("let") {
            let mutable = self.eat_word("mut");
            let local = self.local()?;
            if local.index() < locals.len() && locals[local.index()].is_some() {
                return Err(self.error(format!("`{local}` is declared twice")));
            }
            self.expect(":")?;
            let ty = self.ty()?;
            self.expect(";")?;
            if locals.len() <= local.index() {
                locals.resize(local.index() + 1, None);
            }
            locals[local.index()] = Some(LocalDecl {
                ty,
                mutable,
                debug: None,
            });
        }
        Ok(())
    }

    fn block(&mut self) -> Result<BlockData, ParseError> {
        let mut statements = Vec::new();
        loop {
            if let Some(kind) = self.terminator()? {
                self.expect(";")?;
                let span = self.span_comment()?;
                self.expect("}")?;
                return Ok(BlockData {
                    statements,
                    terminator: Terminator { kind, span },
                });
            }
            let raw = self.eat_word("unsafe");
            let place = self.place()?;
            self.expect("=")?;
            if !raw && self.eat_word("call") {
                if place.index.is_some() {
                    return Err(self.error("a call's destination must be a local".into()));
                }
                let func = self.word("a function name")?;
                self.expect("(")?;
                let mut args = Vec::new();
                while !self.eat(")") {
                    if !args.is_empty() {
                        self.expect(",")?;
                    }
                    args.push(self.operand()?);
                }
                self.expect("->")?;
                let target = self.block_ref()?;
                self.expect(";")?;
                let span = self.span_comment()?;
                self.expect("}")?;
                let kind = TerminatorKind::Call {
                    func,
                    args,
                    dest: place.local,
                    target,
                };
                return Ok(BlockData {
                    statements,
                    terminator: Terminator { kind, span },
                });
            }
            let rvalue = self.rvalue()?;
            self.expect(";")?;
            let span = self.span_comment()?;
            statements.push(Statement {
                place,
                rvalue,
                span,
                raw,
            });
        }
    }

    fn terminator(&mut self) -> Result<Option<TerminatorKind>, ParseError> {
        if self.eat_word("goto") {
            self.expect("->")?;
            return Ok(Some(TerminatorKind::Goto(self.block_ref()?)));
        }
        if self.eat_word("return") {
            return Ok(Some(TerminatorKind::Return));
        }
        if self.eat_word("unreachable") {
            return Ok(Some(TerminatorKind::Unreachable));
        }
        if self.eat_word("barrier") {
            self.expect("->")?;
            return Ok(Some(TerminatorKind::Barrier {
                target: self.block_ref()?,
            }));
        }
        if self.eat_word("tile_mma") {
            self.expect("(")?;
            let acc = self.local()?;
            self.expect(",")?;
            let a = self.local()?;
            self.expect(",")?;
            let b = self.local()?;
            let mut extents = [Param::Value(0); 6];
            for extent in &mut extents {
                self.expect(",")?;
                *extent = Param::Value(self.number("a tile extent")?);
            }
            self.expect(")")?;
            self.expect("->")?;
            let [m, n, k, ldc, lda, ldb] = extents;
            return Ok(Some(TerminatorKind::TileMma {
                acc,
                a,
                b,
                shape: [m, n, k],
                pitches: [ldc, lda, ldb],
                target: self.block_ref()?,
            }));
        }
        if self.eat_word("tile_fill") {
            self.expect("(")?;
            let tile = self.local()?;
            self.expect(",")?;
            let src = self.local()?;
            let mut origin = Vec::new();
            for _ in 0..3 {
                self.expect(",")?;
                origin.push(self.operand()?);
            }
            let mut shape = [Param::Value(0); 3];
            for extent in &mut shape {
                self.expect(",")?;
                *extent = Param::Value(self.number("a tile extent")?);
            }
            self.expect(")")?;
            self.expect("->")?;
            return Ok(Some(TerminatorKind::TileFill {
                tile,
                src,
                origin: [origin[0], origin[1], origin[2]],
                shape,
                target: self.block_ref()?,
            }));
        }
        if self.eat_word("switchInt") {
            self.expect("(")?;
            let discr = self.operand()?;
            self.expect(")")?;
            self.expect("->")?;
            self.expect("[")?;
            let mut targets = Vec::new();
            loop {
                if self.eat_word("otherwise") {
                    self.expect(":")?;
                    let otherwise = self.block_ref()?;
                    self.expect("]")?;
                    return Ok(Some(TerminatorKind::SwitchInt {
                        discr,
                        targets,
                        otherwise,
                    }));
                }
                let value: u128 = self.number("a switch value or `otherwise`")?;
                self.expect(":")?;
                targets.push((value, self.block_ref()?));
                self.expect(",")?;
            }
        }
        if self.eat_word("assert") {
            self.expect("(")?;
            let cond = self.operand()?;
            self.expect(",")?;
            let msg = if let Tok::Word(name) = &self.peek().tok {
                // `BoundsCheck { len: OP, index: OP }` and the other messages with values.
                let name = name.clone();
                let zero = || Operand::Const(Const::Int(0, ScalarTy::Usize));
                let Some((_, [x, y])) =
                    AssertMessage::from_form(&name, zero(), zero()).and_then(|m| m.form())
                else {
                    return self.unexpected("an assert message");
                };
                self.pos += 1;
                self.expect("{")?;
                self.expect_word(x)?;
                self.expect(":")?;
                let a = self.operand()?;
                self.expect(",")?;
                self.expect_word(y)?;
                self.expect(":")?;
                let b = self.operand()?;
                self.expect("}")?;
                AssertMessage::from_form(&name, a, b).expect("the name was just matched")
            } else {
                AssertMessage::Panic(self.string()?)
            };
            self.expect(")")?;
            self.expect("->")?;
            let target = self.block_ref()?;
            return Ok(Some(TerminatorKind::Assert { cond, msg, target }));
        }
        Ok(None)
    }

    fn place(&mut self) -> Result<Place, ParseError> {
        let local = self.local()?;
        if self.eat("[") {
            let index = self.local()?;
            self.expect("]")?;
            return Ok(Place::element(local, index));
        }
        Ok(Place::local(local))
    }

    fn operand(&mut self) -> Result<Operand, ParseError> {
        if self.eat_word("copy") {
            return Ok(Operand::Copy(self.place()?));
        }
        if self.eat_word("move") {
            return Ok(Operand::Move(self.place()?));
        }
        if self.eat_word("const") {
            return Ok(Operand::Const(self.constant()?));
        }
        self.unexpected("an operand (`copy`, `move` or `const`)")
    }

    fn constant(&mut self) -> Result<Const, ParseError> {
        let save = self.pos;
        let w = self.word("a constant")?;
        let bad = |p: &mut Parser| {
            p.pos = save;
            p.error(format!("malformed constant `{w}`"))
        };
        match w.as_str() {
            "true" => return Ok(Const::Bool(true)),
            "false" => return Ok(Const::Bool(false)),
            _ => {}
        }
        // The longest type name the word ends with: `1.5bf16` is a `bf16`, not an `f16`.
        let Some(ty) = ScalarTy::ALL
            .into_iter()
            .filter(|t| *t != ScalarTy::Bool)
            .filter(|t| w.ends_with(t.name()) && w.len() > t.name().len())
            .max_by_key(|t| t.name().len())
        else {
            return Err(bad(self));
        };
        let digits = &w[..w.len() - ty.name().len()];
        if ty.is_float() {
            // A float by its bits, `0x3c23d70a_f32`: how values only rustc knows are
            // written into kernels.
            if let Some(hex) = digits.strip_prefix("0x").and_then(|h| h.strip_suffix('_')) {
                let bits = u64::from_str_radix(hex, 16).map_err(|_| bad(self))?;
                let v = match ty {
                    ScalarTy::F32 => {
                        f32::from_bits(u32::try_from(bits).map_err(|_| bad(self))?) as f64
                    }
                    ScalarTy::F16 => {
                        half::f16::from_bits(u16::try_from(bits).map_err(|_| bad(self))?).to_f64()
                    }
                    ScalarTy::Bf16 => {
                        half::bf16::from_bits(u16::try_from(bits).map_err(|_| bad(self))?).to_f64()
                    }
                    _ => f64::from_bits(bits),
                };
                return Ok(Const::Float(v, ty));
            }
            let v: f64 = digits.parse().map_err(|_| bad(self))?;
            Ok(Const::Float(v, ty))
        } else {
            let v: i128 = digits.parse().map_err(|_| bad(self))?;
            Ok(Const::Int(v, ty))
        }
    }

    fn rvalue(&mut self) -> Result<Rvalue, ParseError> {
        if let Tok::Word(w) = &self.peek().tok {
            let w = w.clone();
            let called = matches!(self.toks[self.pos + 1].tok, Tok::Punct("("));
            if called {
                if let Some(op) = BinOp::ALL.into_iter().find(|op| op.name() == w) {
                    self.pos += 2;
                    let a = self.operand()?;
                    self.expect(",")?;
                    let b = self.operand()?;
                    self.expect(")")?;
                    return Ok(Rvalue::BinaryOp(op, a, b));
                }
                let unary = [UnOp::Neg, UnOp::Not].into_iter().find(|op| op.name() == w);
                if let Some(op) = unary {
                    self.pos += 2;
                    let a = self.operand()?;
                    self.expect(")")?;
                    return Ok(Rvalue::UnaryOp(op, a));
                }
                if let Some(position) = Position::ALL.into_iter().find(|p| p.name() == w) {
                    self.pos += 2;
                    let d: u8 = self.number("a dimension (0, 1 or 2)")?;
                    self.expect(")")?;
                    return Ok(Rvalue::Position(position, d));
                }
                if let Some(intrinsic) = Intrinsic::from_name(&w) {
                    self.pos += 2;
                    let mut args = vec![self.operand()?];
                    while self.eat(",") {
                        args.push(self.operand()?);
                    }
                    self.expect(")")?;
                    return Ok(Rvalue::Intrinsic(intrinsic, args));
                }
                if let Some(op) = SubgroupOp::ALL.into_iter().find(|o| o.name() == w) {
                    self.pos += 2;
                    let mut args = Vec::new();
                    if !self.eat(")") {
                        args.push(self.operand()?);
                        while self.eat(",") {
                            args.push(self.operand()?);
                        }
                        self.expect(")")?;
                    }
                    return Ok(Rvalue::Subgroup(op, args));
                }
                return self.access_rvalue(&w);
            }
        }
        let op = self.operand()?;
        if self.eat_word("as") {
            return Ok(Rvalue::Cast(op, self.scalar_ty()?));
        }
        Ok(Rvalue::Use(op))
    }

    /// The rvalues `w(..)` over places and locals, the current token being `w`: atomic
    /// operations and region and length queries; any other `w` is an unknown rvalue.
    fn access_rvalue(&mut self, w: &str) -> Result<Rvalue, ParseError> {
        if w == "AtomicRmw" {
            self.pos += 2;
            let save = self.pos;
            let name = self.word("an atomic operation")?;
            let Some(op) = AtomicOp::ALL.into_iter().find(|o| o.name() == name) else {
                self.pos = save;
                return Err(self.error(format!("unknown atomic operation `{name}`")));
            };
            self.expect(",")?;
            let place = self.place()?;
            self.expect(",")?;
            let value = self.operand()?;
            self.expect(")")?;
            return Ok(Rvalue::AtomicRmw(op, place, value));
        }
        if w == "AtomicCas" {
            self.pos += 2;
            let place = self.place()?;
            self.expect(",")?;
            let current = self.operand()?;
            self.expect(",")?;
            let new = self.operand()?;
            self.expect(")")?;
            return Ok(Rvalue::AtomicCas(place, current, new));
        }
        if w == "RegionCoord" || w == "RegionExtent" || w == "RegionEnd" {
            self.pos += 2;
            let l = self.local()?;
            self.expect(",")?;
            let d: u8 = self.number("a dimension (0, 1 or 2)")?;
            self.expect(")")?;
            return Ok(match w {
                "RegionCoord" => Rvalue::RegionCoord(l, d),
                "RegionExtent" => Rvalue::RegionExtent(l, d),
                _ => Rvalue::RegionEnd(l, d),
            });
        }
        if w == "Len" || w == "RegionIndex" {
            self.pos += 2;
            let l = self.local()?;
            self.expect(")")?;
            return Ok(if w == "Len" {
                Rvalue::Len(l)
            } else {
                Rvalue::RegionIndex(l)
            });
        }
        Err(self.error(format!("unknown rvalue `{w}`")))
    }
}
